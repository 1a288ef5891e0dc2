public import Foundation
public import Logging
internal import Models
internal import Plumbing

#if canImport(Glibc)
    internal import Glibc
#endif

/// One response kept for offline use.
public struct CachedResponse: Sendable, Hashable {
    /// The entry's key (server origin, path and query).
    public var key: CacheKey
    /// The body as the server sent it.
    public var body: Data
    /// When it was fetched (this machine's clock).
    public var fetchedAt: Date
    /// The response's `ETag`, if it had one.
    public var etag: String?
}

/// Where an entry lives: a namespace (`reservation`, `reservations`, `config`, …) that groups
/// entries for a local search, and the full name (server origin, path and query).
public struct CacheKey: Sendable, Hashable, CustomStringConvertible {
    /// Letters, digits and `-`; the file name's prefix.
    public var namespace: String
    /// The full key, stored in the entry and compared on read.
    public var name: String

    /// Creates a key.
    public init(namespace: String, name: String) {
        self.namespace = namespace
        self.name = name
    }

    /// `namespace:name`.
    public var description: String { "\(namespace):\(name)" }

    /// `<namespace>-<FNV-1a 64 of name, hex>.entry`: no scan needed to find an entry.
    var fileName: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "\(namespace)-\(String(repeating: "0", count: 16 - hex.count))\(hex).entry"
    }
}

/// The offline cache of last responses: one file per response in the app's cache directory
/// of the suite container (`<container>/cache/<app>/`), `0600` in a `0700` directory.
///
/// - An entry is found by its key's file name: nothing is scanned at start or on a read.
/// - Writes go to a temporary file renamed over the entry, so a reader sees a whole old or
///   whole new entry; a killed writer leaves at most a stray temporary file, removed by the
///   next prune.
/// - An entry that does not parse, belongs to another key or is cut short is treated as
///   absent and removed (logged at `warning`).
/// - Entries older than ``maximumAge`` are pruned at most once a day, during a write.
/// - No lock is taken: concurrent writers of one key each rename a whole file; the last
///   one wins, which is the newest data or as good.
public final class ResponseCache: Sendable {
    /// The directory (created on the first write).
    public let directory: URL
    /// Entries older than this are deleted by the daily prune.
    public let maximumAge: TimeInterval
    private let logger: Logger

    /// A cache in `directory`.
    public init(directory: URL, maximumAge: TimeInterval = 30 * 86_400, logger: Logger) {
        self.directory = directory
        self.maximumAge = maximumAge
        self.logger = logger
    }

    private struct Header: Codable {
        var key: String
        var fetchedAt: String
        var etag: String?
        var length: Int
    }

    /// The entry for `key`, or nil when there is none usable.
    public func read(_ key: CacheKey) -> CachedResponse? {
        let path = directory.appendingPathComponent(key.fileName).path
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard var entry = Self.parse(data, path: path) else {
            logger.warning("removing a damaged cache entry", metadata: ["path": "\(path)"])
            unlink(path)
            return nil
        }
        // Another key with the same hash is not ours: leave it for its owner.
        guard entry.key.name == key.name else { return nil }
        entry.key = key
        return entry
    }

    private static func parse(_ data: Data, path: String) -> CachedResponse? {
        guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        guard
            let header = try? JSONDecoder().decode(
                Header.self,
                from: data[data.startIndex..<newline]
            ),
            let fetchedAt = try? RFC3339.date(from: header.fetchedAt)
        else { return nil }
        let body = data[data.index(after: newline)...]
        guard body.count == header.length else { return nil }
        return CachedResponse(
            key: CacheKey(namespace: "", name: header.key),
            body: Data(body),
            fetchedAt: fetchedAt,
            etag: header.etag
        )
    }

    /// Stores `body` under `key`, replacing what was there.
    /// - Throws: ``SuiteClientError`` `storage` naming the file.
    public func write(_ key: CacheKey, body: Data, etag: String?, fetchedAt: Date = Date())
        throws(SuiteClientError)
    {
        try ensureDirectory()
        let header = Header(
            key: key.name,
            fetchedAt: RFC3339.string(from: fetchedAt),
            etag: etag,
            length: body.count
        )
        guard var bytes = try? JSONEncoder().encode(header) else {
            throw SuiteClientError(.storage, "cannot encode a cache header for \(key)")
        }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(body)
        try Self.writeAtomically(bytes, to: directory.appendingPathComponent(key.fileName).path)
        pruneIfDue()
    }

    /// Removes one entry.
    public func remove(_ key: CacheKey) {
        unlink(directory.appendingPathComponent(key.fileName).path)
    }

    /// Removes every entry (sign-out: no customer data stays behind).
    public func removeAll() {
        for name in names() { unlink(directory.appendingPathComponent(name).path) }
    }

    /// Every usable entry of a namespace, newest first, at most `limit` (a local search when
    /// the server cannot be reached; this is the only scan of the directory).
    public func entries(namespace: String, limit: Int = 5_000) -> [CachedResponse] {
        var found: [CachedResponse] = []
        for name in names() where name.hasPrefix(namespace + "-") && name.hasSuffix(".entry") {
            let path = directory.appendingPathComponent(name).path
            guard let data = FileManager.default.contents(atPath: path),
                var entry = Self.parse(data, path: path)
            else { continue }
            entry.key.namespace = namespace
            found.append(entry)
            if found.count >= limit { break }
        }
        return found.sorted { $0.fetchedAt > $1.fetchedAt }
    }

    private func names() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    }

    private func ensureDirectory() throws(SuiteClientError) {
        var info = stat()
        if lstat(directory.path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw SuiteClientError(.storage, "cache path \(directory.path) is not a directory")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw SuiteClientError(
                .storage,
                "cannot create the cache directory \(directory.path)",
                cause: error as NSError
            )
        }
    }

    /// Replaces `target` with `bytes`, whole or not at all (SharedDefaults' one file writer),
    /// `0600`, not flushed: a copy lost in a crash is fetched again.
    static func writeAtomically(_ bytes: Data, to target: String) throws(SuiteClientError) {
        do {
            try FileIO.replaceFile(atPath: target, with: bytes, permissions: 0o600, durable: false)
        } catch {
            throw SuiteClientError(.storage, "cannot write \(target): \(error)")
        }
    }

    /// Deletes old entries and stray temporary files, at most once a day (marker file
    /// `.pruned`'s modification time).
    private func pruneIfDue() {
        let marker = directory.appendingPathComponent(".pruned").path
        var info = stat()
        let now = Date()
        if stat(marker, &info) == 0,
            now.timeIntervalSince1970 - Double(info.st_mtim.tv_sec) < 86_400
        {
            return
        }
        let fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
        for name in names() where name != ".pruned" {
            let path = directory.appendingPathComponent(name).path
            guard stat(path, &info) == 0 else { continue }
            let age = now.timeIntervalSince1970 - Double(info.st_mtim.tv_sec)
            let stray = name.hasSuffix(".tmp") && age > 3_600
            if stray || age > maximumAge { unlink(path) }
        }
    }
}
