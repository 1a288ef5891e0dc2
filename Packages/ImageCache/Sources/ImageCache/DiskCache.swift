public import Foundation
public import Logging
internal import Plumbing
internal import Synchronization

/// A disk cache of byte entries (a body and a small metadata blob per key) that several
/// processes share safely, with a hard limit on its bytes.
///
/// - **Hard limit, also across processes.** Space is reserved in a shared index under a
///   file lock before an entry's temporary file is written, and least recently used entries
///   are evicted to make that room; so the entry files and in-flight temporary files together
///   never exceed ``sizeLimit`` (the index and lock files, a few KB plus 32 bytes an entry,
///   are not counted). Every process sharing a folder should pass the same limit: a writer
///   enforces its own.
/// - **No folder scan.** The index is an on-disk hash table read a few slots at a time, so
///   opening a cache costs the same with 10 or 100,000 entries. The folder is only scanned
///   to rebuild a lost or damaged index.
/// - **Atomic, checked entries.** Entries are written to a temporary file, flushed, renamed
///   into place and their folder flushed. Each holds XXH64 checksums of its header and body;
///   a corrupt, cut-short or foreign file is a miss and is removed.
/// - **Short locks.** The lock is held for index updates and renames only (microseconds, or
///   a flush); never while a body is written, and never across a network wait.
///
/// Reads take no lock; last-use times are batched and written with the next write.
public final class DiskCache: Sendable {
    /// How writes reach the disk.
    public enum Durability: Sendable, Hashable {
        /// `fdatasync` of each entry and of the index before the rename, `fsync` of the
        /// folders: entries and the byte count survive a power loss.
        case full
        /// No flushes: still atomic and consistent if a process is killed, but a power loss
        /// may lose recent entries. For scratch caches, tests and bulk imports.
        case relaxed
    }

    /// One cached entry.
    public struct Entry: Sendable {
        /// The caller's metadata blob (for ``ImagePipeline``, the HTTP caching headers).
        public var metadata: Data
        /// The body bytes.
        public var body: Data
    }

    /// The shared accounting, read from the index.
    public struct Statistics: Sendable, Equatable {
        /// Entries in the cache.
        public var entryCount: Int
        /// Bytes of the entry files.
        public var totalBytes: Int
        /// Bytes promised to writes in flight.
        public var reservedBytes: Int
        /// This instance's limit.
        public var sizeLimit: Int
    }

    /// The cache folder.
    public let directory: URL
    /// The most bytes the entry and temporary files hold together.
    public let sizeLimit: Int
    /// How writes reach the disk.
    public let durability: Durability

    let folder: CacheFolder
    private let handle: Mutex<IndexHandle>
    private let accessTimes = Mutex<[CacheKeyHash: UInt64]>([:])
    private let logger: Logger

    private struct IndexHandle {
        var lockFD: Int32
        var indexFD: Int32 = -1
        var indexDevice: UInt64 = 0
        var indexInode: UInt64 = 0
        var sweptTemporaries = false
    }

    /// Opens (creating it `0700` if needed) the cache in `directory`.
    ///
    /// Opening reads nothing but the folder's descriptors; the index is read a few slots at
    /// a time when it is first needed.
    /// - Parameters:
    ///   - directory: the cache folder, for example `images` in the suite container.
    ///   - sizeLimit: the most bytes the entries hold, at least 4096.
    ///   - durability: ``Durability/full`` unless the cache is scratch space.
    ///   - logger: corrupt entries removed, index rebuilds and recoveries are logged.
    /// - Throws: ``ImageCacheError`` with `invalidConfiguration` or `ioFailure`.
    public init(
        directory: URL,
        sizeLimit: Int,
        durability: Durability = .full,
        logger: Logger = Logger(label: "shopfloor.image-cache")
    ) throws(ImageCacheError) {
        guard sizeLimit >= 4096 else {
            throw ImageCacheError(
                code: .invalidConfiguration,
                message: "the disk cache size limit must be at least 4096 bytes, not \(sizeLimit)",
                path: directory.path
            )
        }
        let path = directory.standardizedFileURL.path
        guard path.hasPrefix("/") else {
            throw ImageCacheError(
                code: .invalidConfiguration,
                message: "the disk cache folder must be an absolute path: \(path)",
                path: path
            )
        }
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw ImageCacheError(
                code: .ioFailure,
                message: "cannot create the disk cache folder \(path)",
                path: path,
                cause: error as NSError
            )
        }
        let fd = POSIX.openAt(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .system("cannot open the disk cache folder", path: path) }
        let lockFD = POSIX.openAt(
            fd,
            CacheFolder.lockName,
            O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW
        )
        guard lockFD >= 0 else {
            let code = errno
            close(fd)
            throw .system("cannot open the lock file", path: path + "/lock", errno: code)
        }
        if mkdirat(fd, CacheFolder.temporaryFolder, 0o700) != 0 && errno != EEXIST {
            let code = errno
            close(lockFD)
            close(fd)
            throw .system("cannot create", path: path + "/tmp", errno: code)
        }
        self.directory = URL(fileURLWithPath: path, isDirectory: true)
        self.sizeLimit = sizeLimit
        self.durability = durability
        self.logger = logger
        folder = CacheFolder(fd: fd, path: path, durable: durability == .full)
        handle = Mutex(IndexHandle(lockFD: lockFD))
    }

    deinit {
        handle.withLock { handle in
            if handle.indexFD >= 0 { close(handle.indexFD) }
            close(handle.lockFD)
        }
        close(folder.fd)
    }

    // MARK: Reading

    /// The entry for `key`, or nil. A corrupt or cut-short entry is removed and is a miss.
    ///
    /// Takes no lock: the file is opened by name, read with two `pread`s and checked.
    public func entry(forKey key: CacheKey) -> Entry? {
        let relative = key.relativePath
        // Non-blocking: a FIFO planted in an entry's place opens at once (and is then found
        // not to be a regular file) instead of blocking until a writer comes.
        let fd = POSIX.openAt(folder.fd, relative, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            switch errno {
            case ENOENT: return nil
            case ELOOP:
                removeDamaged(key, identity: nil, reason: "it is a symbolic link")
            default:
                logger.warning(
                    "cannot open an image cache entry",
                    metadata: ["path": "\(folder.path)/\(relative)", "errno": "\(errno)"]
                )
            }
            return nil
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        guard info.st_mode & S_IFMT == S_IFREG else {
            removeDamaged(key, identity: identity, reason: "it is not a regular file")
            return nil
        }
        // Never allocate for more than this cache could hold (another process may run with a
        // larger limit: its entry is left alone, but not read).
        guard Int(info.st_size) <= sizeLimit else {
            logger.debug(
                "not reading an image cache entry larger than this cache's limit",
                metadata: ["path": "\(folder.path)/\(relative)", "bytes": "\(info.st_size)"]
            )
            return nil
        }
        switch EntryFile.read(fd, size: Int(info.st_size), key: key) {
        case .entry(let metadata, let body):
            recordAccess(key)
            return Entry(metadata: metadata, body: body)
        case .otherKey:
            return nil
        case .corrupt(let reason):
            removeDamaged(key, identity: identity, reason: reason)
            return nil
        case .failed(let code):
            logger.warning(
                "cannot read an image cache entry",
                metadata: ["path": "\(folder.path)/\(relative)", "errno": "\(code)"]
            )
            if code == EIO { removeDamaged(key, identity: identity, reason: "reading it failed") }
            return nil
        }
    }

    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    /// Removes a damaged entry unless another writer replaced it since it was read.
    func removeDamaged(_ key: CacheKey, identity: FileIdentity?, reason: String) {
        let relative = key.relativePath
        logger.warning(
            "removing a damaged image cache entry",
            metadata: ["path": "\(folder.path)/\(relative)", "reason": "\(reason)"]
        )
        do {
            try withIndex { session throws(ImageCacheError) in
                if let identity {
                    var info = stat()
                    guard fstatat(folder.fd, relative, &info, AT_SYMLINK_NOFOLLOW) == 0,
                        FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
                            == identity
                    else { return }
                }
                try session.remove(key.high, key.low)
            }
        } catch {
            logger.warning(
                "cannot remove a damaged image cache entry",
                metadata: ["path": "\(folder.path)/\(relative)", "error": "\(error)"]
            )
        }
    }

    private func recordAccess(_ key: CacheKey) {
        let pending = accessTimes.withLock { times in
            times[CacheKeyHash(high: key.high, low: key.low)] = POSIX.nowMicroseconds()
            return times.count
        }
        // Write them out now and then without ever waiting for the lock on a read.
        if pending >= 256 { try? flushAccessTimes(wait: false) }
    }

    /// Writes the last-use times recorded by reads to the index (they are otherwise written
    /// with the next write, or once 256 are pending).
    public func flushAccessTimes() throws(ImageCacheError) {
        try flushAccessTimes(wait: true)
    }

    private func flushAccessTimes(wait: Bool) throws(ImageCacheError) {
        _ = try withIndex(wait: wait) { _ throws(ImageCacheError) in }
    }

    // MARK: Writing

    /// Stores an entry, replacing any older one for `key`, evicting least recently used
    /// entries as needed. Returns once the entry is in place (and, with full durability,
    /// flushed).
    ///
    /// - Throws: ``ImageCacheError``: `entryTooLarge` (the entry alone exceeds the limit),
    ///   `cacheBusy` (other processes' in-flight writes hold the space), `ioFailure`.
    public func store(_ body: Data, metadata: Data = Data(), forKey key: CacheKey)
        throws(ImageCacheError)
    {
        let head = EntryFile.encodeHead(key: key, metadata: metadata, body: body)
        let size = head.count + body.count
        guard size <= sizeLimit else {
            throw ImageCacheError(
                code: .entryTooLarge,
                message:
                    "an entry of \(size) bytes for \(key) is larger than the disk cache limit of \(sizeLimit) bytes",
                url: key.string,
                path: folder.path
            )
        }
        let bytes = UInt64(size)
        let limit = UInt64(sizeLimit)
        var id: UInt64 = 0
        while id == 0 { id = UInt64.random(in: .min ... .max) }
        liveReservations.insert(id)
        defer { liveReservations.remove(id) }

        // 1. Reserve the space (evicting for it) under the lock.
        try withIndex { session throws(ImageCacheError) in
            try session.reclaimStaleReservations()
            guard try session.makeRoom(for: bytes, limit: limit),
                session.reserve(id: id, bytes: bytes)
            else { throw busy(key, size) }
        }

        // 2. Write the temporary file without the lock.
        let temporary = folder.temporaryName(id)
        do {
            try writeTemporary(temporary, head: head, body: body)
        } catch {
            unlinkat(folder.fd, temporary, 0)
            try? withIndex { session throws(ImageCacheError) in _ = session.takeReservation(id: id)
            }
            throw error
        }

        // 3. Turn the reservation into an entry under the lock.
        let relative = key.relativePath
        let folderName = String(relative.prefix(2))
        let replaced: Bool
        do throws(ImageCacheError) {
            replaced = try withIndex { session throws(ImageCacheError) -> Bool in
                if session.takeReservation(id: id) == nil {
                    // Another process took this writer for dead and freed its space.
                    try session.reclaimStaleReservations()
                    guard try session.makeRoom(for: bytes, limit: limit) else {
                        throw busy(key, size)
                    }
                }
                let now = POSIX.nowMicroseconds()
                if let (position, slot) = try session.find(key.high, key.low).found {
                    // Count the larger of the two until the new file is surely in place.
                    let larger = max(slot.size, bytes)
                    try session.resize(at: position, slot: slot, to: larger, accessed: now)
                    try session.sync()
                    try rename(temporary, to: relative, folderName: folderName)
                    if folder.durable { POSIX.syncFolder(folder.fd, folderName) }
                    if larger != bytes {
                        var current = slot
                        current.size = larger
                        try session.resize(at: position, slot: current, to: bytes, accessed: now)
                    }
                    return true
                }
                try session.insert(key.high, key.low, size: bytes, accessed: now)
                try session.sync()
                do throws(ImageCacheError) {
                    try rename(temporary, to: relative, folderName: folderName)
                } catch {
                    if let (position, slot) = try session.find(key.high, key.low).found {
                        try session.clear(at: position, slot: slot)
                    }
                    throw error
                }
                return false
            }
        } catch {
            unlinkat(folder.fd, temporary, 0)
            throw error
        }
        if folder.durable && !replaced { POSIX.syncFolder(folder.fd, folderName) }
    }

    private func busy(_ key: CacheKey, _ size: Int) -> ImageCacheError {
        ImageCacheError(
            code: .cacheBusy,
            message:
                "no room for \(size) bytes for \(key): other writers' in-flight entries hold the space of the \(sizeLimit)-byte limit",
            url: key.string,
            path: folder.path
        )
    }

    private func writeTemporary(_ name: String, head: [UInt8], body: Data) throws(ImageCacheError) {
        let fd = POSIX.openAt(folder.fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .system("cannot create", path: folder.path + "/" + name) }
        var ok = head.withUnsafeBytes { POSIX.writeFully(fd, $0) }
        if ok { ok = body.withUnsafeBytes { POSIX.writeFully(fd, $0) } }
        if ok && folder.durable { ok = fdatasync(fd) == 0 }
        let code = errno
        close(fd)
        guard ok else { throw .system("cannot write", path: folder.path + "/" + name, errno: code) }
    }

    private func rename(_ temporary: String, to relative: String, folderName: String)
        throws(ImageCacheError)
    {
        if renameat(folder.fd, temporary, folder.fd, relative) == 0 { return }
        guard errno == ENOENT else {
            throw .system("cannot rename an entry into", path: folder.path + "/" + relative)
        }
        // The entry's folder does not exist yet (or the temporary file was swept).
        if mkdirat(folder.fd, folderName, 0o700) == 0 {
            if folder.durable { fsync(folder.fd) }
        } else if errno != EEXIST {
            throw .system("cannot create", path: folder.path + "/" + folderName)
        }
        guard renameat(folder.fd, temporary, folder.fd, relative) == 0 else {
            throw .system("cannot rename an entry into", path: folder.path + "/" + relative)
        }
    }

    // MARK: Removing

    /// Removes the entry for `key`, if any.
    public func removeEntry(forKey key: CacheKey) throws(ImageCacheError) {
        try withIndex { session throws(ImageCacheError) in
            _ = try session.remove(key.high, key.low)
        }
    }

    /// Removes every entry (writes in flight in other processes still complete).
    public func removeAll() throws(ImageCacheError) {
        accessTimes.withLock { $0.removeAll() }
        try withIndex { session throws(ImageCacheError) in
            for name in CacheFolder.entryFolders {
                for file in folder.names(in: name) { unlinkat(folder.fd, name + "/" + file, 0) }
            }
            if folder.durable {
                for name in CacheFolder.entryFolders { POSIX.syncFolder(folder.fd, name) }
            }
            try session.reset()
            session.sweepTemporaries()
        }
    }

    /// The shared counts, read from the index under the lock.
    public func statistics() throws(ImageCacheError) -> Statistics {
        try withIndex { session throws(ImageCacheError) in
            Statistics(
                entryCount: Int(session.header.count),
                totalBytes: Int(session.header.committedBytes),
                reservedBytes: Int(session.header.reservedBytes),
                sizeLimit: sizeLimit
            )
        }
    }

    // MARK: Locking

    /// Runs `body` with the index while holding the cache's file lock (and this instance's
    /// mutex, since `flock` does not exclude threads sharing a descriptor). Returns nil
    /// without running `body` when `wait` is false and the lock is taken.
    @discardableResult
    private func withIndex<T: Sendable>(
        wait: Bool = true,
        _ body: (inout IndexSession) throws(ImageCacheError) -> T
    ) throws(ImageCacheError) -> T? {
        let pending = accessTimes.withLock { times -> [CacheKeyHash: UInt64] in
            let taken = times
            times.removeAll(keepingCapacity: true)
            return taken
        }
        do {
            func run(_ handle: inout IndexHandle) throws(ImageCacheError) -> T? {
                try locked(&handle, wait: wait, pending: pending, body)
            }
            if wait {
                return try handle.withLock { handle throws(ImageCacheError) in try run(&handle) }
            }
            let result = try handle.withLockIfAvailable { handle throws(ImageCacheError) in
                try run(&handle)
            }
            guard let result else {
                restore(pending)
                return nil
            }
            return result
        } catch {
            restore(pending)
            throw error
        }
    }

    private func withIndex<T: Sendable>(_ body: (inout IndexSession) throws(ImageCacheError) -> T)
        throws(ImageCacheError) -> T
    {
        try withIndex(wait: true, body)!
    }

    private func restore(_ pending: [CacheKeyHash: UInt64]) {
        guard !pending.isEmpty else { return }
        accessTimes.withLock { times in
            for (key, time) in pending where times[key] ?? 0 < time { times[key] = time }
        }
    }

    private func locked<T>(
        _ handle: inout IndexHandle,
        wait: Bool,
        pending: [CacheKeyHash: UInt64],
        _ body: (inout IndexSession) throws(ImageCacheError) -> T
    ) throws(ImageCacheError) -> T? {
        // A job-control stop (SIGTSTP) is deferred while the index lock is held: this
        // process never stops holding it, and stops right after releasing it.
        StopDeferral.enter()
        if !POSIX.lockFile(handle.lockFD, wait ? LOCK_EX : LOCK_EX | LOCK_NB) {
            let failure = errno
            StopDeferral.leave()
            if !wait && failure == EWOULDBLOCK {
                restore(pending)
                return nil
            }
            throw .system("cannot lock", path: folder.path + "/lock", errno: failure)
        }
        defer {
            _ = POSIX.lockFile(handle.lockFD, LOCK_UN)
            StopDeferral.leave()
        }
        // Another process may have replaced the index file (grown or rebuilt it).
        if handle.indexFD >= 0 {
            var current = stat()
            if fstatat(folder.fd, CacheFolder.indexName, &current, AT_SYMLINK_NOFOLLOW) != 0
                || UInt64(current.st_ino) != handle.indexInode
                || UInt64(current.st_dev) != handle.indexDevice
            {
                close(handle.indexFD)
                handle.indexFD = -1
            }
        }
        var session: IndexSession
        do {
            session = try IndexSession.open(folder: folder, fd: handle.indexFD, logger: logger)
        } catch  where error.cause is IndexDamage {
            // Damaged slots found while recounting: the index is rebuilt from the folder.
            session = try rebuildDamaged(&handle, closing: handle.indexFD, error)
        } catch {
            handle.indexFD = -1
            throw error
        }
        if !handle.sweptTemporaries {
            session.sweepTemporaries()
            handle.sweptTemporaries = true
        }
        var rebuilt = false
        while true {
            do {
                if !pending.isEmpty { try session.applyAccessTimes(pending) }
                let result = try body(&session)
                try session.finish()
                adopt(session, into: &handle)
                return result
            } catch  where error.cause is IndexDamage && !rebuilt {
                // A damaged slot (garbage where a size or an empty slot should be) is never
                // used for arithmetic: the index is rebuilt from the entry files, and the
                // operation runs again on it.
                session = try rebuildDamaged(&handle, closing: session.fd, error)
                rebuilt = true
            } catch {
                // Keep the header in line with the slots written before the failure.
                try? session.finish()
                adopt(session, into: &handle)
                throw error
            }
        }
    }

    /// Replaces a damaged index with one rebuilt from the folder; `fd` is the damaged
    /// index's open descriptor (a rewrite may already have closed the handle's).
    private func rebuildDamaged(
        _ handle: inout IndexHandle,
        closing fd: Int32,
        _ error: ImageCacheError
    ) throws(ImageCacheError) -> IndexSession {
        if fd >= 0 { close(fd) }
        handle.indexFD = -1
        let reason = (error.cause as? IndexDamage)?.reason ?? error.message
        let session = try IndexSession.rebuild(folder: folder, reason: reason, logger: logger)
        adopt(session, into: &handle)
        return session
    }

    /// Remembers the session's index descriptor (a rebuild or a rewrite, which closes the
    /// old one, makes a new one).
    private func adopt(_ session: IndexSession, into handle: inout IndexHandle) {
        guard session.fd != handle.indexFD else { return }
        handle.indexFD = session.fd
        var info = stat()
        fstat(session.fd, &info)
        handle.indexDevice = UInt64(info.st_dev)
        handle.indexInode = UInt64(info.st_ino)
    }
}
