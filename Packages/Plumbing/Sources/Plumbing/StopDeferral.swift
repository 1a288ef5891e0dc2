internal import Glibc
internal import Synchronization

/// Keeps a job-control stop (`SIGTSTP`, Ctrl-Z) from stopping the process while it holds a
/// short file lock that other processes wait for.
///
/// A process stopped inside a critical section keeps its `flock` until it is continued, so
/// every other process of the suite waits for it (or times out). While at least one section
/// is open (``enter()`` without its ``leave()``, on any thread), a `SIGTSTP` is noted instead
/// of stopping the process; the ``leave()`` that closes the last section sends it again, and
/// the process stops then, with no lock held. Outside sections a `SIGTSTP` stops the process
/// at once, as by default, or goes on to the handler that was installed before (so other
/// libraries doing the same, such as ImageCache, chain and each defers for its own sections).
///
/// The handler is installed on the first ``enter()``; a process that ignores `SIGTSTP` keeps
/// ignoring it. Sections must be short (a few file operations): a stop waits for them.
///
/// ```swift
/// try StopDeferral.run { () throws(MyError) in
///     // flock, a few reads and writes, unlock
/// }
/// ```
public enum StopDeferral {
    /// Opens a section: until the matching ``leave()``, a `SIGTSTP` is deferred.
    public static func enter() {
        guard stopHandlerInstalled else { return }
        sectionDepth.add(1, ordering: .sequentiallyConsistent)
    }

    /// Closes a section opened by ``enter()``. When it was the last one open and a `SIGTSTP`
    /// arrived meanwhile, sends it again: the process stops now, its locks released.
    public static func leave() {
        guard stopHandlerInstalled else { return }
        let (_, open) = sectionDepth.subtract(1, ordering: .sequentiallyConsistent)
        if open == 0 && stopPending.exchange(false, ordering: .sequentiallyConsistent) {
            kill(getpid(), SIGTSTP)
        }
    }

    /// Runs `body` as one section (see ``enter()``).
    public static func run<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        enter()
        defer { leave() }
        return try body()
    }

    /// The number of sections open in the process right now.
    public static var openSections: Int {
        sectionDepth.load(ordering: .sequentiallyConsistent)
    }
}

private let sectionDepth = Atomic<Int>(0)
private let stopPending = Atomic<Bool>(false)
// Written once, before the handler that reads it is installed (by the global's one-time
// initialisation below), and never again.
nonisolated(unsafe) private var previousStopAction = sigaction()

/// Installs the handler once; false when `SIGTSTP` is ignored (nothing to defer).
private let stopHandlerInstalled: Bool = {
    // The atomics exist before the handler can run.
    _ = sectionDepth.load(ordering: .sequentiallyConsistent)
    _ = stopPending.load(ordering: .sequentiallyConsistent)
    var current = sigaction()
    guard sigaction(SIGTSTP, nil, &current) == 0 else { return false }
    let handler = unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
    if handler == unsafeBitCast(SIG_IGN, to: Int.self) { return false }
    previousStopAction = current
    var action = sigaction()
    action.__sigaction_handler.sa_sigaction = onStopSignal
    action.sa_flags = SA_SIGINFO | SA_RESTART
    sigemptyset(&action.sa_mask)
    return sigaction(SIGTSTP, &action, nil) == 0
}()

/// The `SIGTSTP` handler: async-signal-safe (atomics, `kill`, the chained handler).
private func onStopSignal(
    _ number: Int32,
    _ info: UnsafeMutablePointer<siginfo_t>?,
    _ context: UnsafeMutableRawPointer?
) {
    let saved = errno
    defer { errno = saved }
    // Noted first, then the sections counted: a `leave()` racing with this either sees the
    // note and sends the signal again, or this sees no section and takes the note back.
    stopPending.store(true, ordering: .sequentiallyConsistent)
    if sectionDepth.load(ordering: .sequentiallyConsistent) > 0 { return }
    guard stopPending.exchange(false, ordering: .sequentiallyConsistent) else { return }
    let previous = previousStopAction
    if previous.sa_flags & SA_SIGINFO != 0,
        let chained = previous.__sigaction_handler.sa_sigaction
    {
        chained(number, info, context)
    } else if let chained = previous.__sigaction_handler.sa_handler {
        chained(number)
    } else {
        // The default action of SIGTSTP: stop (SIGSTOP cannot be caught or ignored).
        kill(getpid(), SIGSTOP)
    }
}
