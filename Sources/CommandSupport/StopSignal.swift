internal import CStartup
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// SIGINT and SIGTERM for every app of the suite, the same way.
///
/// The handlers are installed by `CStartup` before any Swift code runs in every executable
/// that links it (descriptors 0-2 made safe, SIGPIPE ignored; test runners excepted), so no
/// signal is lost or fatal at start and no app can forget them. One watcher thread reads
/// them. On the first, ``CommandMain`` cancels the running command (async work such as
/// `scan`'s image loop or `watch`'s change loop ends at once and prints what it has whole),
/// and the process exits 130 (SIGINT) or 143 (SIGTERM) as soon as the command returns, or
/// after ``grace`` (90 ms unless the command allowed more) at the latest, not in the middle
/// of a write to stdout or stderr unless that write is blocked (``exit(_:)`` waits
/// ``writeWait`` for it): by default within 100 ms of the signal, and within about
/// ``writeWait`` while output is stuck on a full pipe (a write that holds the output lock
/// that long after the signal is taken as blocked, and the grace is not waited out). A
/// second signal exits at once.
public enum StopSignal {
    /// How long a stopping command may take to wind down before the process exits anyway,
    /// unless the command allowed more (``allowGrace(_:)``).
    /// With ``writeWait``, a stop takes 100 ms at most.
    public static let defaultGrace: Duration = .milliseconds(90)

    private struct State {
        var watching = false
        var actions: [@Sendable () -> Void] = []
        var stopping = false
        var grace = StopSignal.defaultGrace
        var reloadActions: [@Sendable () -> Void] = []
    }

    private static let state = Mutex<State>(State())

    /// Installs the handlers (if the start-up code has not) and starts the watcher thread;
    /// idempotent.
    public static func install() {
        sf_startup_install()
        let start = state.withLock { state -> Bool in
            defer { state.watching = true }
            return !state.watching
        }
        guard start, sf_signal_fd() >= 0 else { return }
        let thread = Thread { watch(sf_signal_fd()) }
        thread.name = "StopSignal"
        thread.start()
    }

    /// The first stop signal received (SIGINT or SIGTERM), or nil.
    public static var received: Int32? {
        let number = sf_signal_first()
        return number == 0 ? nil : number
    }

    /// The exit status for the signal received: 130 for SIGINT, 143 for SIGTERM.
    public static var exitStatus: ExitStatus? {
        guard let received else { return nil }
        return received == SIGTERM ? .terminated : .interrupted
    }

    /// How long a stopping command may take to wind down before the process exits anyway.
    public static var grace: Duration { state.withLock { $0.grace } }

    /// Lets a command that winds down slowly (a server answering its requests in flight) take
    /// up to `grace` after the first stop signal before the process exits anyway. Set it
    /// before the signal can matter: a grace period already running keeps its end. A second
    /// signal still exits at once.
    public static func allowGrace(_ grace: Duration) {
        state.withLock { $0.grace = max(grace, defaultGrace) }
    }

    /// Runs `action` on the first stop signal (at once if one has arrived already).
    public static func onStop(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.stopping { return true }
            state.actions.append(action)
            return false
        }
        if now { action() }
    }

    /// Adds `action` to what SIGHUP runs (``ReloadSignal``), and installs its handler.
    static func addReloadAction(_ action: @escaping @Sendable () -> Void) -> Bool {
        install()
        guard sf_reload_install() == 0 else { return false }
        state.withLock { $0.reloadActions.append(action) }
        return true
    }

    /// How long an exit waits for a write to stdout or stderr in progress to finish.
    public static let writeWait: Duration = .milliseconds(10)

    /// How often (ms) the watcher looks at the output lock while a command winds down.
    private static let stoppingTick: Int32 = 2

    /// Ends the process with `status` once no thread is writing to stdout or stderr, so no
    /// line is cut by the exit, but waiting at most ``writeWait``: a write blocked on a full
    /// pipe whose reader does not read never finishes, and must not hold the exit (its line
    /// could not be completed anyway). Nothing buffered in Swift or C stdio is flushed (the
    /// suite's output is never buffered there), and no exit handler runs while worker
    /// threads may still be inside C libraries.
    public static func exit(_ status: Int32) -> Never {
        let end = ContinuousClock.now + writeWait
        repeat {
            _ = standardStreamsLock.withLockIfAvailable { _ -> Void in _exit(status) }
            usleep(500)
        } while ContinuousClock.now < end
        _exit(status)
    }

    /// Replaces this process with a new run of its program (`/proc/self/exe`) with
    /// `arguments`, so a stop signal that arrives meanwhile stays pending for the new image
    /// rather than killing it; when one has arrived already, exits 130/143 instead. Returns
    /// only when the exec fails.
    public static func reexecute(_ arguments: [String]) {
        sf_signal_block_for_exec()
        if let status = exitStatus { _exit(status.rawValue) }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        execv("/proc/self/exe", &argv)
        sf_signal_unblock()
    }

    private static func watch(_ fd: Int32) {
        var first: Int32 = 0
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var deadline: ContinuousClock.Instant?
        // Since when a write to stdout or stderr has held the output lock, seen while
        // stopping: one held for ``writeWait`` is blocked (a full pipe nobody reads), and the
        // command behind it cannot wind down, so the grace period is not waited out.
        var writingSince: ContinuousClock.Instant?
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - .now
                timeout = max(
                    0,
                    min(
                        Self.stoppingTick,
                        Int32(
                            left.components.seconds * 1000 + left.components.attoseconds
                                / 1_000_000_000_000_000
                        )
                    )
                )
            }
            descriptor.revents = 0
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready == 0, let deadline {
                let status =
                    first == SIGTERM
                    ? ExitStatus.terminated.rawValue : ExitStatus.interrupted.rawValue
                // The command did not wind down within the grace period.
                if ContinuousClock.now >= deadline { exit(status) }
                let writing = standardStreamsLock.withLockIfAvailable { _ in false } ?? true
                if !writing {
                    writingSince = nil
                } else if let since = writingSince {
                    if ContinuousClock.now - since >= writeWait { _exit(status) }
                } else {
                    writingSince = .now
                }
                continue
            }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { continue }
            if Int32(byte) == SIGHUP {
                // A reload: never a stop, and ignored once stopping.
                let actions = state.withLock { $0.stopping ? [] : $0.reloadActions }
                for action in actions { action() }
                continue
            }
            if first != 0 {
                _exit(
                    first == SIGTERM
                        ? ExitStatus.terminated.rawValue : ExitStatus.interrupted.rawValue
                )
            }
            first = Int32(byte)
            let (actions, grace) = state.withLock { state in
                state.stopping = true
                defer { state.actions = [] }
                return (state.actions, state.grace)
            }
            deadline = .now + grace
            for action in actions { action() }
        }
    }
}
