import Foundation
internal import Glibc
internal import Plumbing

/// The suite's exclusive `flock` on `defaults.lock`, with a bounded, reported wait.
///
/// An uncontended lock is one non-blocking `flock`. When another process holds it, a helper
/// thread waits in a blocking `flock` (so the kernel wakes it as soon as the lock is free,
/// with no polling) while the caller waits on a condition with a deadline: after
/// `announceAfter` it says who it is waiting for, and at the timeout it gives up with
/// ``SharedStoreError/Code/lockTimeout``. A helper whose caller gave up releases the lock as
/// soon as it gets it, or hands it to the next caller of this process that wants it; at most
/// one helper exists per lock, so two never unlock each other's lock.
///
/// From the start of ``acquire(timeout:announceAfter:announce:)`` to ``release()`` a job
/// control stop (`SIGTSTP`) is deferred (``StopDeferral``): a process is never stopped
/// holding the suite's lock; it stops right after releasing it.
final class SuiteLock: @unchecked Sendable {
    // Safe: `fd` is immutable; every other field is read and written only while holding
    // `condition`. The helper thread keeps `self` alive until it has finished with `fd`.
    let fd: Int32
    let path: String
    private let condition = NSCondition()
    private var helperRunning = false
    private var wanted = false
    private var acquired = false
    private var helperFailure: Int32?

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Takes the lock; see the type's description.
    /// - Parameters:
    ///   - timeout: how long to wait for another process; nil waits as long as it takes.
    ///   - announceAfter: when to call `announce` (once) if the lock is still held.
    func acquire(
        timeout: Duration?,
        announceAfter: Duration,
        announce: (_ holder: Int32?) -> Void
    ) throws(SharedStoreError) {
        StopDeferral.enter()
        do {
            try acquireLocked(timeout: timeout, announceAfter: announceAfter, announce: announce)
        } catch {
            StopDeferral.leave()
            throw error
        }
    }

    private func acquireLocked(
        timeout: Duration?,
        announceAfter: Duration,
        announce: (_ holder: Int32?) -> Void
    ) throws(SharedStoreError) {
        condition.lock()
        defer { condition.unlock() }
        if !helperRunning {
            while true {
                if flock(fd, LOCK_EX | LOCK_NB) == 0 { return }
                if errno == EINTR { continue }
                guard errno == EWOULDBLOCK else { throw .system("cannot lock", path: path) }
                break
            }
            startHelper()
        }
        wanted = true
        defer { wanted = false }
        let start = Date()
        let deadline = timeout.map { start.addingTimeInterval($0.seconds) }
        var announceAt: Date? = start.addingTimeInterval(announceAfter.seconds)
        while !acquired {
            if let failure = helperFailure {
                helperFailure = nil
                throw .system("cannot lock", path: path, errno: failure)
            }
            let wake = [announceAt, deadline].compactMap { $0 }.min()
            if let wake {
                if condition.wait(until: wake) { continue }
            } else {
                condition.wait()
                continue
            }
            let now = Date()
            if let at = announceAt, now >= at {
                announceAt = nil
                condition.unlock()
                announce(holderPID())
                condition.lock()
                continue
            }
            if let deadline, now >= deadline {
                let seconds = timeout.map { "\($0.seconds)" } ?? "?"
                throw SharedStoreError(
                    code: .lockTimeout,
                    message:
                        "another process held the suite's lock \(path)\(holderPID().map { " (process \($0))" } ?? "") for more than \(seconds) s; nothing was written",
                    path: path
                )
            }
        }
        acquired = false
    }

    /// Releases the lock taken by ``acquire(timeout:announceAfter:announce:)``; a stop
    /// deferred meanwhile takes effect now.
    func release() {
        _ = flock(fd, LOCK_UN)
        StopDeferral.leave()
    }

    private func startHelper() {
        helperRunning = true
        let thread = Thread { [self] in
            var result: Int32 = 0
            while flock(fd, LOCK_EX) != 0 {
                if errno == EINTR { continue }
                result = errno
                break
            }
            condition.lock()
            helperRunning = false
            if result != 0 {
                helperFailure = result
            } else if wanted {
                acquired = true
            } else {
                _ = flock(fd, LOCK_UN)
            }
            condition.broadcast()
            condition.unlock()
        }
        thread.name = "SharedStore.lock"
        thread.start()
    }

    /// The process holding the lock, from `/proc/locks` (nil when it cannot be told).
    func holderPID() -> Int32? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        // Read to the end with read(2): /proc/locks reports a size of 0 and is produced per
        // read, and a busy machine's table (every SQLite and flock lock) runs to many pages.
        let locks = open("/proc/locks", O_RDONLY | O_CLOEXEC)
        guard locks >= 0 else { return nil }
        defer { close(locks) }
        guard let bytes = try? FileIO.readAll(locks, limit: 64 << 20, name: "/proc/locks") else {
            return nil
        }
        let table = String(decoding: bytes, as: UTF8.self)
        let inode = ":\(info.st_ino) "
        for line in table.split(separator: "\n") where line.contains("FLOCK") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a "->" marks a waiter).
            guard !fields.contains("->"), fields.count >= 6,
                (String(fields[5]) + " ").hasSuffix(inode), let pid = Int32(fields[4]),
                pid != getpid()
            else { continue }
            return pid
        }
        return nil
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        let (whole, fraction) = components
        return TimeInterval(whole) + TimeInterval(fraction) / 1e18
    }
}
