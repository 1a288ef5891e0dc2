import Foundation
internal import Glibc
import Synchronization

/// Watches one directory with inotify on a dedicated thread and calls `handler` when one of
/// the watched names is created, replaced (renamed over), rewritten, removed or moved, or
/// when the kernel's event queue overflowed (anything may have changed).
///
/// The thread blocks in `poll` on the inotify descriptor and a pipe; ``stop()`` writes to
/// the pipe, the thread closes both descriptors and exits, and `stop` waits for that
/// (unless it is called on the watcher thread itself, from the handler).
final class DirectoryWatcher: Sendable {
    private let inotifyFD: Int32
    /// The write end of the wake-up pipe; the thread polls the read end.
    private let wakeWriteFD: Int32
    private let control = Control()

    /// Shared with the thread (a class, because a `Mutex` cannot be captured by value).
    private final class Control: Sendable {
        let state = Mutex<WatchState>(WatchState())
        let exited = DispatchSemaphore(value: 0)
    }

    private struct WatchState {
        var stopped = false
        var exited = false
        var thread: pthread_t?
    }

    init(
        directory: String,
        names: Set<String>,
        handler: @escaping @Sendable (_ directoryGone: Bool) -> Void
    ) throws(SharedStoreError) {
        let inotifyFD = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotifyFD >= 0 else {
            throw SharedStoreError(
                code: .notificationsUnavailable,
                message: "cannot start inotify for \(directory)",
                path: directory,
                errno: errno
            )
        }
        let mask =
            UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_CREATE)
            | UInt32(IN_DELETE) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
        guard inotify_add_watch(inotifyFD, directory, mask) >= 0 else {
            let error = errno
            close(inotifyFD)
            throw SharedStoreError(
                code: .notificationsUnavailable,
                message: "cannot watch \(directory) with inotify (see fs.inotify.max_user_watches)",
                path: directory,
                errno: error
            )
        }
        // A directory this process holds open gets no IN_DELETE_SELF when it is removed (not
        // until the last descriptor closes): its parent reports the removal instead.
        let parent = (directory as NSString).deletingLastPathComponent
        let ownName = Array((directory as NSString).lastPathComponent.utf8)
        let parentWatch = inotify_add_watch(
            inotifyFD,
            parent.isEmpty ? "/" : parent,
            UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM) | UInt32(IN_ONLYDIR)
        )
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let error = errno
            close(inotifyFD)
            throw SharedStoreError(
                code: .notificationsUnavailable,
                message: "cannot create a wake-up pipe",
                errno: error
            )
        }
        let wakeFD = pipeFDs[0]
        let wakeWriteFD = pipeFDs[1]
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        self.inotifyFD = inotifyFD
        self.wakeWriteFD = wakeWriteFD
        let nameBytes = Set(names.map { Array($0.utf8) })
        let thread = Thread { [inotifyFD, wakeFD, wakeWriteFD, control] in
            control.state.withLock { $0.thread = pthread_self() }
            Self.run(
                inotifyFD: inotifyFD,
                wakeFD: wakeFD,
                names: nameBytes,
                parentWatch: parentWatch,
                ownName: ownName,
                handler: handler
            )
            // Closed under the lock so that `stop` never writes to a descriptor number that
            // has already been closed (and possibly reused).
            control.state.withLock { state in
                state.exited = true
                close(inotifyFD)
                close(wakeFD)
                close(wakeWriteFD)
            }
            control.exited.signal()
        }
        thread.name = "SharedStore.watch"
        thread.start()
    }

    /// Whether the thread has exited and closed its descriptors.
    var isClosed: Bool { control.state.withLock { $0.exited } }

    /// Stops the thread and closes the descriptors; idempotent.
    func stop() {
        let (alreadyStopped, thread) = control.state.withLock { state in
            defer { state.stopped = true }
            if !state.stopped && !state.exited {
                var one: UInt8 = 1
                _ = write(wakeWriteFD, &one, 1)
            }
            return (state.stopped, state.thread)
        }
        guard !alreadyStopped else { return }
        if let thread, pthread_equal(thread, pthread_self()) != 0 { return }
        control.exited.wait()
    }

    deinit { stop() }

    private static func run(
        inotifyFD: Int32,
        wakeFD: Int32,
        names: Set<[UInt8]>,
        parentWatch: Int32,
        ownName: [UInt8],
        handler: @Sendable (Bool) -> Void
    ) {
        // Large enough for many events; inotify never splits one event across reads.
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        var fds = [
            pollfd(fd: inotifyFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            var relevant = false
            var gone = false
            while true {
                let count = read(inotifyFD, buffer, bufferSize)
                if count <= 0 { break }
                var offset = 0
                while offset + 16 <= count {
                    let watch = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(
                        buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)
                    )
                    if watch == parentWatch && parentWatch >= 0 {
                        // Only the watched directory's own removal or move matters here.
                        if mask & UInt32(IN_IGNORED) == 0 && length > 0 {
                            let start = buffer.advanced(by: offset + 16).assumingMemoryBound(
                                to: UInt8.self
                            )
                            let name = Array(
                                UnsafeBufferPointer(start: start, count: strnlen(start, length))
                            )
                            if name == ownName {
                                relevant = true
                                gone = true
                            }
                        }
                    } else if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                        relevant = true
                    } else if mask
                        & (UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_IGNORED)) != 0
                    {
                        relevant = true
                        gone = true
                    } else if length > 0 {
                        let start = buffer.advanced(by: offset + 16).assumingMemoryBound(
                            to: UInt8.self
                        )
                        let name = Array(
                            UnsafeBufferPointer(start: start, count: strnlen(start, length))
                        )
                        if names.contains(name) { relevant = true }
                    }
                    offset += 16 + length
                }
            }
            // When the directory itself is gone nothing more arrives on this watch; the
            // thread still waits for `stop` so the descriptors are closed in one place.
            if relevant { handler(gone) }
        }
    }
}

private func strnlen(_ pointer: UnsafePointer<UInt8>, _ limit: Int) -> Int {
    var length = 0
    while length < limit && pointer[length] != 0 { length += 1 }
    return length
}
