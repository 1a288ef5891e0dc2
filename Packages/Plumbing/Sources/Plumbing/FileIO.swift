public import Foundation
internal import Glibc

/// Whole-buffer writes and atomic file replacement on POSIX descriptors: the one place the
/// suite loops over short writes, `EINTR` and `EAGAIN`, and the one way it replaces a file.
///
/// ```swift
/// let status = bytes.withUnsafeBytes { FileIO.writeAll(1, $0) }   // 0, or the errno
/// try FileIO.replaceFile(atPath: "settings.json", with: Array(text.utf8))
/// try FileIO.replaceFile(atPath: tokenPath, with: data, permissions: 0o600)
/// ```
public enum FileIO {
    /// Writes every byte to `fd`, retrying short writes and `EINTR`, and waiting for a
    /// non-blocking descriptor to become writable on `EAGAIN`.
    /// - Returns: 0 when every byte was written, else the `errno` of the failed `write`
    ///   (`EPIPE` for a closed pipe, `ENOSPC` for a full disk, `EBADF` for a closed
    ///   descriptor).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard var next = bytes.baseAddress else { return 0 }
        var remaining = bytes.count
        while remaining > 0 {
            let count = write(fd, next, remaining)
            if count < 0 {
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN || error == EWOULDBLOCK {
                    var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                return error
            }
            // write(2) returns 0 only for a zero count; treat anything else as no space.
            if count == 0 { return ENOSPC }
            next += count
            remaining -= count
        }
        return 0
    }

    /// Writes every byte of `bytes` to `fd`; see ``writeAll(_:_:)-(Int32,UnsafeRawBufferPointer)``.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }

    /// Reads `fd` to its end, refusing more than `limit` bytes as soon as the limit is
    /// passed (nothing more is read).
    /// - Parameter name: how errors name the input (`stdin`, a path).
    /// - Throws: ``FileIOError`` with `tooLarge`, or `system` for a failed `read` (a closed
    ///   descriptor, a directory, an I/O error).
    public static func readAll(_ fd: Int32, limit: Int, name: String) throws(FileIOError) -> [UInt8]
    {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                throw FileIOError(
                    code: .system,
                    path: name,
                    errno: errno,
                    message: "cannot read \(name)"
                )
            }
            if count == 0 { return bytes }
            guard bytes.count + count <= limit else {
                throw FileIOError(
                    code: .tooLarge,
                    path: name,
                    message: "\(name) holds more than \(limit) bytes, the limit for this input"
                )
            }
            bytes.append(contentsOf: chunk[..<count])
        }
    }

    /// Reads the file at `path` (through symbolic links), refusing more than `limit` bytes.
    /// - Throws: ``FileIOError`` naming the path: `tooLarge`, `notRegularFile` for a
    ///   directory, `system` when it cannot be opened or read.
    public static func readFile(atPath path: String, limit: Int) throws(FileIOError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .system("cannot open", path: path) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
            throw FileIOError(code: .notRegularFile, path: path, message: "\(path) is a directory")
        }
        return try readAll(fd, limit: limit, name: path)
    }

    /// Replaces the file at `path` with `bytes` as users expect of a command that writes a
    /// file: atomically (a temporary file in the same directory, written in full, renamed
    /// over the target), through a symbolic link the caller (or root) owns to the file it names (the link stays). This
    /// is the suite's one way to replace a file: settings exports, saved images, the token
    /// file and the refresh lease (Auth), the client's offline copies (SuiteClient).
    ///
    /// - Parameters:
    ///   - bytes: the whole new content (`[UInt8]`, `Data`, any contiguous bytes).
    ///   - permissions: the new file's mode bits exactly (`0o600` for a credential), whatever
    ///     the umask or the old file's; `nil` keeps an existing file's permissions and, where
    ///     allowed, its owner (a new file gets `0o666` less the umask).
    ///   - durable: flush the file before the rename and the directory after it, so the new
    ///     content survives a power loss once this returns; `false` for what can be fetched
    ///     again (a cache), where a crash may leave the old version but never a torn one.
    /// - Throws: ``FileIOError`` with `notRegularFile` when the path (or the link's target)
    ///   is a directory, FIFO, socket or device, which are refused rather than replaced by a
    ///   regular file; `untrustedLink` when a symbolic link on the way belongs to another
    ///   user (or sits in `/tmp` and is not the caller's), naming it; `system` for a failed
    ///   system call, naming the path. The temporary file is removed on every failure.
    public static func replaceFile(
        atPath path: String,
        with bytes: some ContiguousBytes,
        permissions: Int? = nil,
        durable: Bool = true
    ) throws(FileIOError) {
        let target = try resolveWritableTarget(path)
        let directory = (target as NSString).deletingLastPathComponent
        let directoryPath = directory.isEmpty ? "." : directory
        let base = (target as NSString).lastPathComponent
        var existing = stat()
        let exists = stat(target, &existing) == 0
        let mode: mode_t =
            permissions.map { mode_t($0 & 0o7777) }
            ?? (exists ? existing.st_mode & 0o7777 : 0o666)
        var temporary = ""
        var fd: Int32 = -1
        for attempt in 0..<100 {
            temporary = "\(directoryPath)/.\(base).\(getpid()).\(attempt).tmp"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else {
            throw .system("cannot create a temporary file in", path: directoryPath)
        }
        var keep = false
        defer {
            if !keep { unlink(temporary) }
        }
        if permissions != nil {
            // Exactly these bits: `open` applied the umask.
            _ = fchmod(fd, mode)
        } else if exists {
            // Keep the file's permissions (umask applied to `open`) and, where allowed, its owner.
            _ = fchmod(fd, mode)
            if existing.st_uid != geteuid() || existing.st_gid != getegid() {
                _ = fchown(fd, existing.st_uid, existing.st_gid)
            }
        }
        let written = bytes.withUnsafeBytes { writeAll(fd, $0) }
        guard written == 0 else {
            close(fd)
            throw .system("cannot write", path: temporary, errno: written)
        }
        if durable {
            guard fsync(fd) == 0 else {
                let error = errno
                close(fd)
                throw .system("cannot flush", path: temporary, errno: error)
            }
        }
        guard close(fd) == 0 else { throw .system("cannot close", path: temporary) }
        guard rename(temporary, target) == 0 else {
            throw .system("cannot rename the new file over", path: target)
        }
        keep = true
        guard durable else { return }
        let directoryFD = open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            defer { close(directoryFD) }
            guard fsync(directoryFD) == 0 else {
                throw .system("cannot flush the directory", path: directoryPath)
            }
        }
    }

    /// The path to write for `path`: itself, or the file its symbolic links lead to (which
    /// may not exist yet); refuses anything that exists and is not a regular file, and every
    /// link (in the chain, or among the directories on the way) that ``checkLink(_:_:)``
    /// does not trust.
    static func resolveWritableTarget(_ path: String) throws(FileIOError) -> String {
        var current = path
        for _ in 0..<40 {
            try checkDirectoryLinks(of: current, named: path)
            var info = stat()
            guard lstat(current, &info) == 0 else {
                if errno == ENOENT { return current }
                throw .system("cannot inspect", path: current)
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG: return current
            case S_IFLNK:
                try checkLink(current, info, named: path)
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let count = readlink(current, &buffer, buffer.count - 1)
                guard count >= 0 else { throw .system("cannot read the link", path: current) }
                let link = String(
                    decoding: buffer[..<count].map { UInt8(bitPattern: $0) },
                    as: UTF8.self
                )
                current =
                    link.hasPrefix("/")
                    ? link
                    : ((current as NSString).deletingLastPathComponent as NSString)
                        .appendingPathComponent(link)
            default:
                throw FileIOError(
                    code: .notRegularFile,
                    path: path,
                    message:
                        "\(path) is \(kindName(info.st_mode)), not a regular file; only regular files are written"
                )
            }
        }
        throw FileIOError(
            code: .system,
            path: path,
            errno: ELOOP,
            message: "cannot follow the symbolic links of \(path)"
        )
    }

    /// Refuses to follow the link at `link` (with `info` from `lstat`) unless it is one the
    /// kernel's protected-symlinks rule would follow for this process, whether or not that
    /// rule is on: a link is followed only when its owner is the caller or root, and one in
    /// a sticky world-writable directory (`/tmp`) only when its owner is the caller or owns
    /// that directory. So a link another user planted can never make this process (root
    /// above all) replace a file the planter could not.
    static func checkLink(_ link: String, _ info: stat, named path: String) throws(FileIOError) {
        let caller = geteuid()
        let owner = info.st_uid
        let parent = (link as NSString).deletingLastPathComponent
        var directory = stat()
        let inSticky =
            stat(parent.isEmpty ? "." : parent, &directory) == 0
            && directory.st_mode & S_ISVTX != 0 && directory.st_mode & S_IWOTH != 0
        let trusted =
            inSticky ? owner == caller || owner == directory.st_uid : owner == caller || owner == 0
        guard !trusted else { return }
        let why =
            inSticky
            ? "it sits in the sticky world-writable directory \(parent) and belongs to \(userName(owner)), not to you or that directory's owner"
            : "it belongs to \(userName(owner)), not to you or root"
        throw FileIOError(
            code: .untrustedLink,
            path: path,
            message: "refusing to write \(path) through the symbolic link \(link): \(why)"
        )
    }

    /// Applies ``checkLink(_:_:named:)`` to every directory on the way to `target` that is
    /// a symbolic link (`/tmp/planted/out.png` where `planted` points elsewhere).
    static func checkDirectoryLinks(of target: String, named path: String) throws(FileIOError) {
        var absolute = target
        if !absolute.hasPrefix("/") {
            absolute = FileManager.default.currentDirectoryPath + "/" + absolute
        }
        let components = absolute.split(separator: "/").dropLast()
        var prefix = ""
        for component in components {
            prefix += "/" + component
            var info = stat()
            guard lstat(prefix, &info) == 0 else { return }
            if info.st_mode & S_IFMT == S_IFLNK { try checkLink(prefix, info, named: path) }
        }
    }

    /// `user 1001 (alice)`, or `root`.
    static func userName(_ uid: uid_t) -> String {
        if uid == 0 { return "root" }
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else {
            return "user \(uid)"
        }
        return "user \(uid) (\(String(cString: name)))"
    }

    static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "not a regular file"
        }
    }
}

/// A failed ``FileIO`` operation, naming the path.
public struct FileIOError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Hashable {
        /// The path is a directory, FIFO, socket or device: refused, not replaced.
        case notRegularFile
        /// The input holds more bytes than the reader's limit; the rest was not read.
        case tooLarge
        /// A system call failed; ``FileIOError/errno`` says why.
        case system
        /// The path leads through a symbolic link another user planted (one the kernel's
        /// protected-symlinks rule would not follow): refused, nothing written.
        case untrustedLink
    }

    /// The kind of failure.
    public var code: Code
    /// The path involved.
    public var path: String
    /// The `errno` of the failed call, when there is one.
    public var errno: Int32?
    /// What went wrong, for people.
    public var message: String

    /// Creates an error.
    public init(code: Code, path: String, errno: Int32? = nil, message: String) {
        self.code = code
        self.path = path
        self.errno = errno
        self.message = message
    }

    /// The message, with the system's text for `errno` when there is one.
    public var description: String {
        guard let errno else { return message }
        return "\(message): \(String(cString: strerror(errno)))"
    }

    static func system(_ what: String, path: String, errno: Int32 = Glibc.errno) -> FileIOError {
        FileIOError(code: .system, path: path, errno: errno, message: "\(what) \(path)")
    }
}
