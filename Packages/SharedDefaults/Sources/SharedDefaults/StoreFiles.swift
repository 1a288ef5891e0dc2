import Foundation
internal import Glibc
internal import Plumbing

/// The store's files in a suite container, reached through one directory descriptor so that
/// every open, rename and link is relative to the container the store checked.
///
/// The descriptor is opened once and closed in `deinit`; it is only ever passed to `*at`
/// system calls, which are thread-safe, so sharing this object across threads is safe.
final class StoreFiles: Sendable {
    static let storeName = "defaults.store"
    static let backupName = "defaults.store.bak"
    static let backupTempName = "defaults.store.bak.new"
    static let tempName = "defaults.store.new"
    static let lockName = "defaults.lock"

    let directoryPath: String
    let directoryFD: Int32

    init(directory: URL) throws(SharedStoreError) {
        directoryPath = directory.path
        let fd = open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .system("cannot open the suite container", path: directoryPath) }
        directoryFD = fd
    }

    deinit { close(directoryFD) }

    func path(_ name: String) -> String { directoryPath + "/" + name }

    enum Load {
        /// No store file: a suite never written to.
        case missing
        /// The header's generation is the one the caller already has.
        case unchanged(generation: UInt64)
        /// A complete, valid store.
        case loaded(generation: UInt64, values: [String: DefaultsValue])
        /// The file exists but is not a valid store, or is not a file this user owns.
        case corrupt(reason: String)
    }

    /// Reads a store file. With `knownGeneration`, only the header is read when its
    /// generation matches (the common case after this process's own commit).
    func load(_ name: String = storeName, knownGeneration: UInt64? = nil) throws(SharedStoreError)
        -> Load
    {
        var fd: Int32
        repeat {
            fd = openat(directoryFD, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        } while fd < 0 && errno == EINTR
        if fd < 0 {
            switch errno {
            case ENOENT: return .missing
            // Not a plain file, or one we may not read: never read through it.
            case ELOOP: return .corrupt(reason: "it is a symbolic link")
            case EACCES, EPERM: return .corrupt(reason: "it is not readable")
            default: throw .system("cannot open", path: path(name))
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system("cannot inspect", path: path(name)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .corrupt(reason: "it is not a regular file")
        }
        guard info.st_uid == geteuid() else {
            return .corrupt(reason: "it is owned by uid \(info.st_uid), not by this user")
        }
        let size = Int(info.st_size)
        guard size <= DefaultsLimits.maximumStoreBytes else {
            // Never read it: every process would hold it in memory.
            return .corrupt(
                reason:
                    "it is \(size) bytes, more than the \(DefaultsLimits.maximumStoreBytes)-byte limit"
            )
        }
        if let knownGeneration, size >= StoreFormat.headerSize {
            var header = [UInt8](repeating: 0, count: StoreFormat.headerSize)
            let count = header.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: 0) }
            if count == StoreFormat.headerSize,
                case .success(let decoded) = StoreFormat.decodeHeader(header),
                decoded.generation == knownGeneration,
                decoded.payloadLength == UInt64(size - StoreFormat.headerSize)
            {
                return .unchanged(generation: knownGeneration)
            }
        }
        var bytes = [UInt8](repeating: 0, count: size)
        let count = bytes.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: 0) }
        guard count >= 0 else {
            if errno == EIO { return .corrupt(reason: "reading it failed with an I/O error") }
            throw .system("cannot read", path: path(name))
        }
        switch StoreFormat.decode(bytes, count: count) {
        case .success(let decoded):
            return .loaded(generation: decoded.header.generation, values: decoded.values)
        case .failure(let error):
            return .corrupt(reason: error.description)
        }
    }

    /// Writes a complete new version: temporary file, `fdatasync`, hard link of the current
    /// version to `.bak`, `rename` over the store, `fsync` of the directory. The store file
    /// is at every moment a complete old or new version. Call only while holding the lock.
    func commit(_ values: [String: DefaultsValue], generation: UInt64) throws(SharedStoreError) {
        let bytes: [UInt8]
        do {
            bytes = try StoreFormat.encode(values, generation: generation)
        } catch {
            throw SharedStoreError(
                code: .limitExceeded,
                message: error.message,
                path: path(Self.storeName),
                cause: error
            )
        }
        var fd: Int32
        repeat {
            fd = openat(
                directoryFD,
                Self.tempName,
                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                0o600
            )
        } while fd < 0 && errno == EINTR
        if fd < 0 && errno == ELOOP {
            // Something put a link under our temporary name; never write through it.
            unlinkat(directoryFD, Self.tempName, 0)
            fd = openat(
                directoryFD,
                Self.tempName,
                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                0o600
            )
        }
        guard fd >= 0 else { throw .system("cannot create", path: path(Self.tempName)) }
        var closed = false
        defer { if !closed { close(fd) } }
        _ = fchmod(fd, 0o600)
        let written = FileIO.writeAll(fd, bytes)
        guard written == 0 else {
            throw .system("cannot write", path: path(Self.tempName), errno: written)
        }
        guard fdatasync(fd) == 0 else { throw .system("cannot flush", path: path(Self.tempName)) }
        closed = true
        guard close(fd) == 0 else { throw .system("cannot close", path: path(Self.tempName)) }
        // Keep the version being replaced as `.bak` (a hard link: no copy, and the old inode
        // is never written again, so it stays exactly the last good version).
        unlinkat(directoryFD, Self.backupTempName, 0)
        if linkat(directoryFD, Self.storeName, directoryFD, Self.backupTempName, 0) == 0 {
            _ = renameat(directoryFD, Self.backupTempName, directoryFD, Self.backupName)
        }
        guard renameat(directoryFD, Self.tempName, directoryFD, Self.storeName) == 0 else {
            throw .system("cannot rename the new version over", path: path(Self.storeName))
        }
        guard fsync(directoryFD) == 0 else {
            throw .system("cannot flush the directory", path: directoryPath)
        }
    }

    /// Moves a bad store aside as `defaults.store.corrupt-<UTC timestamp>`; returns its path.
    func moveAside(_ name: String = storeName) -> String? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var time = now.tv_sec
        var parts = tm()
        gmtime_r(&time, &parts)
        let stamp = String(
            format: "%04d%02d%02dT%02d%02d%02d.%06dZ",
            Int(parts.tm_year) + 1900,
            Int(parts.tm_mon) + 1,
            Int(parts.tm_mday),
            Int(parts.tm_hour),
            Int(parts.tm_min),
            Int(parts.tm_sec),
            Int(now.tv_nsec / 1000)
        )
        let target = "\(name).corrupt-\(stamp)"
        guard renameat(directoryFD, name, directoryFD, target) == 0 else { return nil }
        fsync(directoryFD)
        return path(target)
    }

    /// Opens (creating `0600`) the lock file.
    func openLockFile() throws(SharedStoreError) -> Int32 {
        let fd = openat(
            directoryFD,
            Self.lockName,
            O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
            0o600
        )
        guard fd >= 0 else { throw .system("cannot open the lock file", path: path(Self.lockName)) }
        return fd
    }

    /// Identity of the store file, for stat-based refresh.
    func storeIdentity() -> FileIdentity? {
        var info = stat()
        guard fstatat(directoryFD, Self.storeName, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            return nil
        }
        return FileIdentity(info)
    }
}
