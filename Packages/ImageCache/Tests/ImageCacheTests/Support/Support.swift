import Auth
import Foundation
import ImageCache
import InMemoryLogging
import Logging
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh folder under the system's temporary directory, removed on deinit.
final class TemporaryFolder: Sendable {
    let url: URL
    var path: String { url.path }

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("image-cache-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func child(_ name: String) -> URL { url.appendingPathComponent(name, isDirectory: true) }
}

let quietLogger: Logger = {
    var logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    logger.logLevel = .critical
    return logger
}()

/// Collects log messages (swift-log's `InMemoryLogHandler`) so tests can check what the
/// cache reported.
struct LogCollector: Sendable {
    let handler = InMemoryLogHandler()

    var logger: Logger {
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .debug
        return logger
    }

    func contains(_ level: Logger.Level, _ text: String) -> Bool {
        handler.entries.contains { $0.level == level && "\($0.message)".contains(text) }
    }
}

/// Sizes of the files in a cache folder, read from the file system (not from the index).
struct FolderScan {
    var entryFiles: [String: Int] = [:]
    var temporaryFiles: [String: Int] = [:]

    var entryBytes: Int { entryFiles.values.reduce(0, +) }
    var temporaryBytes: Int { temporaryFiles.values.reduce(0, +) }
    var totalBytes: Int { entryBytes + temporaryBytes }

    init(_ folder: URL) {
        let manager = FileManager.default
        let names = (try? manager.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.count == 2 || name == "tmp" {
            let sub = folder.appendingPathComponent(name)
            for file in (try? manager.contentsOfDirectory(atPath: sub.path)) ?? [] {
                var info = stat()
                guard lstat(sub.appendingPathComponent(file).path, &info) == 0 else { continue }
                if name == "tmp" {
                    temporaryFiles[file] = Int(info.st_size)
                } else {
                    entryFiles[name + "/" + file] = Int(info.st_size)
                }
            }
        }
    }
}

/// Runs `body` while holding the cache folder's lock, as a writer would: nothing commits or
/// reserves meanwhile.
func withCacheLock<T>(_ folder: URL, _ body: () throws -> T) rethrows -> T {
    let fd = open(folder.appendingPathComponent("lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    precondition(fd >= 0)
    defer { close(fd) }
    while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
    defer { flock(fd, LOCK_UN) }
    return try body()
}

/// Deterministic random numbers (SplitMix64), so traces repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A deterministic body of `count` bytes for `seed`.
func bodyBytes(_ count: Int, seed: UInt64) -> Data {
    var generator = SeededGenerator(seed: seed)
    var data = Data(count: count)
    data.withUnsafeMutableBytes { raw in
        var offset = 0
        while offset < count {
            var word = generator.next()
            let take = min(8, count - offset)
            withUnsafeBytes(of: &word) {
                raw.baseAddress!.advanced(by: offset).copyMemory(
                    from: $0.baseAddress!,
                    byteCount: take
                )
            }
            offset += take
        }
    }
    return data
}

/// A small PNG-like image: signature, IHDR with the size, then padding to `size` bytes.
/// Enough for ``PNGHeaderDecoder``; not meant to be drawn.
func pngImage(width: UInt32, height: UInt32, size: Int = 48 * 1024, seed: UInt64 = 1) -> Data {
    var data = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    data += [0, 0, 0, 13] + Array("IHDR".utf8)
    for value in [width, height] {
        data += [
            UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF),
            UInt8(value & 0xFF),
        ]
    }
    data += [8, 6, 0, 0, 0, 0, 0, 0, 0]
    if size > data.count { data += bodyBytes(size - data.count, seed: seed) }
    return data
}

/// What the test decoder makes of an image.
struct PNGInfo: Sendable, Equatable {
    var width: Int
    var height: Int
    var byteCount: Int
}

struct NotAPNG: Error {}

/// A trivial decoder: reads the PNG signature and IHDR size; cost is width × height × 4.
struct PNGHeaderDecoder: ImageDecoding {
    let decodes = Counter()

    func decode(_ data: Data, url: URL) throws -> PNGInfo {
        decodes.increment()
        let bytes = [UInt8](data.prefix(24))
        guard bytes.count == 24, bytes[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A],
            bytes[12..<16] == ArraySlice(Array("IHDR".utf8))
        else { throw NotAPNG() }
        func field(_ offset: Int) -> Int {
            bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        }
        return PNGInfo(width: field(16), height: field(20), byteCount: data.count)
    }

    func cost(of image: PNGInfo, data: Data) -> Int { image.width * image.height * 4 }
}

final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// A clock the tests move forward instead of sleeping.
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)
    let start = Date()
    func now() -> Date { start.addingTimeInterval(offset.withLock { $0 }) }
    func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
}

/// The stress tool, built next to the test bundle in the same products directory.
let stressToolURL: URL = {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return executable.deletingLastPathComponent().appendingPathComponent("ImageCacheStressTool")
}()

/// Unsigned downloads through the suite's one URLSession bridge (Auth's), each bounded by
/// `timeout` (held answers wait for a test's gate on a loaded machine).
struct PlainTransport: ImageTransport {
    let transport = URLSessionHTTPTransport()
    var timeout: Duration = .seconds(30)

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await transport.send(request, deadline: .now + timeout) { _, _, new in .follow(new) }
    }
}
