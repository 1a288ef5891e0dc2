public import Foundation
internal import ImageCache
public import Logging
internal import Models
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// One response kept for offline use.
public struct CachedResponse: Sendable, Hashable {
    /// The entry's key (server origin, path and query).
    public var key: ResponseKey
    /// The body as the server sent it.
    public var body: Data
    /// When it was fetched (this machine's clock).
    public var fetchedAt: Date
    /// The response's `ETag`, if it had one.
    public var etag: String?
}

/// Where a response is kept: a namespace (`reservation`, `reservations`, `config`, …) that
/// groups entries for a local search, and the full name (server origin, path and query).
public struct ResponseKey: Sendable, Hashable, CustomStringConvertible {
    /// Letters, digits and `-`.
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

    /// The disk cache's key: `namespace name` (a namespace holds no space).
    var storageKey: String { "\(namespace) \(name)" }
}

/// The offline cache of last responses, on the suite's one disk cache (ImageCache's
/// `DiskCache`, as product images use) in the app's cache directory of the suite container
/// (`<container>/cache/<app>/`), `0700`.
///
/// - **Bounded.** At most ``sizeLimit`` bytes (32 MiB by default); the least recently used
///   responses are evicted to make room, also across processes.
/// - **No scan on a read.** An entry is found by its key's hash; only ``entries(namespace:limit:)``
///   (an offline search) reads the folder.
/// - **Atomic, checked entries.** A reader sees a whole old or a whole new entry; a damaged or
///   foreign file, or anything that is not a regular file (a FIFO, a link), is a miss.
/// - **Cheap to create.** Nothing is opened until the first read or write.
///
/// Entries are not flushed to disk (a copy lost in a crash is fetched again).
public final class ResponseCache: Sendable {
    /// The directory (created on the first use).
    public let directory: URL
    /// The most bytes the entries hold.
    public let sizeLimit: Int
    private let logger: Logger
    private let disk = Mutex<DiskCache?>(nil)

    /// A cache in `directory`, holding at most `sizeLimit` bytes.
    public init(directory: URL, sizeLimit: Int = 32 << 20, logger: Logger) {
        self.directory = directory
        self.sizeLimit = sizeLimit
        self.logger = logger
    }

    /// The metadata kept beside a body.
    private struct Metadata: Codable {
        var fetchedAt: Date
        var etag: String?
    }

    /// The disk cache, opened on first use (and the files of the cache's first format, a
    /// flat folder of `*.entry` files, removed once).
    private func opened() throws(SuiteClientError) -> DiskCache {
        try disk.withLock { disk throws(SuiteClientError) -> DiskCache in
            if let disk { return disk }
            Self.removeFirstFormat(in: directory)
            do throws(ImageCacheError) {
                let made = try DiskCache(
                    directory: directory,
                    sizeLimit: sizeLimit,
                    durability: .relaxed,
                    logger: logger
                )
                disk = made
                return made
            } catch {
                throw SuiteClientError(
                    .storage,
                    "cannot open the offline cache \(directory.path): \(error.message)",
                    cause: error
                )
            }
        }
    }

    /// The entry for `key`, or nil when there is none usable.
    public func read(_ key: ResponseKey) -> CachedResponse? {
        guard let disk = try? opened(),
            let entry = disk.entry(forKey: CacheKey(key.storageKey))
        else { return nil }
        return Self.response(key, entry)
    }

    private static func response(_ key: ResponseKey, _ entry: DiskCache.Entry) -> CachedResponse? {
        guard
            let metadata = try? ModelsJSON.makeDecoder().decode(Metadata.self, from: entry.metadata)
        else { return nil }
        return CachedResponse(
            key: key,
            body: entry.body,
            fetchedAt: metadata.fetchedAt,
            etag: metadata.etag
        )
    }

    /// Stores `body` under `key`, replacing what was there (evicting older responses when
    /// the cache is full).
    /// - Throws: ``SuiteClientError`` `storage` naming the folder and the reason (a full
    ///   disk, a response larger than the whole cache).
    public func write(_ key: ResponseKey, body: Data, etag: String?, fetchedAt: Date = Date())
        throws(SuiteClientError)
    {
        let disk = try opened()
        let metadata: Data
        do {
            metadata = try ModelsJSON.makeEncoder().encode(
                Metadata(fetchedAt: fetchedAt, etag: etag)
            )
        } catch {
            throw SuiteClientError(.storage, "cannot encode the cache metadata for \(key)")
        }
        do throws(ImageCacheError) {
            try disk.store(body, metadata: metadata, forKey: CacheKey(key.storageKey))
        } catch {
            throw SuiteClientError(
                .storage,
                "cannot keep \(key.namespace) for offline use in \(directory.path): \(error.message)",
                cause: error
            )
        }
    }

    /// Removes one entry.
    public func remove(_ key: ResponseKey) {
        guard let disk = try? opened() else { return }
        do { try disk.removeEntry(forKey: CacheKey(key.storageKey)) } catch {
            logger.warning(
                "cannot remove an offline cache entry",
                metadata: ["key": "\(key.namespace)", "error": "\(error)"]
            )
        }
    }

    /// Removes every entry (sign-out: no customer data stays behind); returns how many there
    /// were.
    /// - Throws: ``SuiteClientError`` `storage` when the folder cannot be emptied.
    @discardableResult
    public func removeAll() throws(SuiteClientError) -> Int {
        var info = stat()
        guard lstat(directory.path, &info) == 0 else { return 0 }  // never written
        let disk = try opened()
        do throws(ImageCacheError) {
            let count = try disk.statistics().entryCount
            try disk.removeAll()
            return count
        } catch {
            throw SuiteClientError(
                .storage,
                "cannot empty the offline cache \(directory.path): \(error.message)",
                cause: error
            )
        }
    }

    /// Every usable entry of a namespace, newest first, at most `limit` (a local search when
    /// the server cannot be reached; the only scan of the folder).
    public func entries(namespace: String, limit: Int = 5_000) -> [CachedResponse] {
        guard let disk = try? opened() else { return [] }
        let prefix = namespace + " "
        var found: [CachedResponse] = []
        for listed in disk.entries(keyPrefix: prefix, limit: limit) {
            let name = String(listed.key.string.dropFirst(prefix.count))
            let key = ResponseKey(namespace: namespace, name: name)
            if let response = Self.response(key, listed.entry) { found.append(response) }
        }
        return found.sorted { $0.fetchedAt > $1.fetchedAt }
    }

    /// Removes what the first format of this cache left (`*.entry` files beside a `.pruned`
    /// marker): customer data must not outlive the format change on disk.
    static func removeFirstFormat(in directory: URL) {
        let marker = directory.appendingPathComponent(".pruned").path
        var info = stat()
        guard lstat(marker, &info) == 0 else { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasSuffix(".entry") || name.contains(".tmp") {
            unlink(directory.appendingPathComponent(name).path)
        }
        unlink(marker)
    }
}
