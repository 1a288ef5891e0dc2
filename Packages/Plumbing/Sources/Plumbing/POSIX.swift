public import Glibc

/// The POSIX loops every package of the suite needs and none should write twice: positioned
/// reads and writes to the end, `openat` and `flock` retried on `EINTR`, a folder flush, and
/// the real-time clock in microseconds (comparable across processes).
///
/// Each returns what the system call did, with `errno` left as the call set it, so callers
/// keep their own typed errors:
///
/// ```swift
/// let fd = POSIX.openAt(directory, "index", O_RDWR | O_CREAT | O_CLOEXEC)
/// guard fd >= 0, POSIX.lockFile(fd, LOCK_EX) else { throw .system("cannot lock", path: p) }
/// let count = bytes.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: 0) }
/// ```
public enum POSIX {
    /// Reads until `buffer` is full or end of file; returns the count, or -1 with `errno`.
    public static func preadFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int)
        -> Int
    {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let count = pread(fd, base + done, buffer.count - done, off_t(offset + done))
            if count < 0 {
                if errno == EINTR { continue }
                return -1
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Writes all of `buffer` at `offset`; returns false with `errno` on failure.
    public static func pwriteFully(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, offset: Int)
        -> Bool
    {
        guard let base = buffer.baseAddress else { return true }
        var done = 0
        while done < buffer.count {
            let count = pwrite(fd, base + done, buffer.count - done, off_t(offset + done))
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            if count == 0 {
                errno = ENOSPC
                return false
            }
            done += count
        }
        return true
    }

    /// Writes all of `buffer` at the file position; returns false with `errno` on failure
    /// (a blocking descriptor; ``FileIO/writeAll(_:_:)-(Int32,UnsafeRawBufferPointer)`` also
    /// waits out `EAGAIN`).
    public static func writeFully(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        let error = FileIO.writeAll(fd, buffer)
        if error != 0 { errno = error }
        return error == 0
    }

    /// `openat`, retried on `EINTR`; -1 with `errno` on failure.
    public static func openAt(
        _ directory: Int32,
        _ path: String,
        _ flags: Int32,
        _ mode: mode_t = 0o600
    ) -> Int32 {
        var fd: Int32
        repeat {
            fd = openat(directory, path, flags, mode)
        } while fd < 0 && errno == EINTR
        return fd
    }

    /// `open`, retried on `EINTR`; -1 with `errno` on failure.
    public static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o600) -> Int32 {
        openAt(AT_FDCWD, path, flags, mode)
    }

    /// `flock`, retried on `EINTR`; returns false with `errno` on failure.
    public static func lockFile(_ fd: Int32, _ operation: Int32) -> Bool {
        while flock(fd, operation) != 0 {
            if errno == EINTR { continue }
            return false
        }
        return true
    }

    /// `fsync` of a folder relative to `directory` (`"."` for `directory` itself).
    @discardableResult
    public static func syncFolder(_ directory: Int32, _ name: String) -> Bool {
        let fd = openAt(directory, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }

    /// Microseconds since 1970 from the real-time clock (comparable across processes).
    public static func nowMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec / 1000)
    }
}
