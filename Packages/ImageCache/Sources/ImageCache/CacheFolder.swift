import Foundation
internal import Logging
internal import Plumbing
internal import Synchronization

/// The cache folder as the index sees it: a directory descriptor and the names in it.
struct CacheFolder: Sendable {
    static let indexName = "index"
    static let indexTempName = "index.new"
    static let lockName = "lock"
    static let temporaryFolder = "tmp"

    let fd: Int32
    let path: String
    let durable: Bool

    func temporaryName(_ id: UInt64) -> String { Self.temporaryFolder + "/" + hexID(id) }

    /// The entry folders' names, `00` to `ff`.
    static let entryFolders: [String] = (0..<256).map { value in
        let digits = Array("0123456789abcdef")
        return String([digits[value >> 4], digits[value & 15]])
    }

    /// The names in a folder of the cache (empty when it does not exist).
    func names(in folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path + "/" + folder)) ?? []
    }
}

/// Reservation ids this process holds now; another instance in the same process that finds
/// one of its pid's reservations missing from here knows it is left over from a crash (the
/// pid was reused).
let liveReservations = LiveReservations()

final class LiveReservations: Sendable {
    private let ids = Mutex<Set<UInt64>>([])
    func insert(_ id: UInt64) { _ = ids.withLock { $0.insert(id) } }
    func remove(_ id: UInt64) { _ = ids.withLock { $0.remove(id) } }
    func contains(_ id: UInt64) -> Bool { ids.withLock { $0.contains(id) } }
}
