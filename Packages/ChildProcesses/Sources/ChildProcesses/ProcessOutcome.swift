public import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How a child process ended and what it wrote: an exit told apart from a signal, and
/// both from a crash.
public struct ProcessOutcome: Sendable, CustomStringConvertible {
    /// The exit code, or the signal's number when ``signalled``.
    public var status: Int32
    /// Ended by a signal (``status`` is its number).
    public var signalled: Bool
    /// The bytes written to stdout (when it was a pipe) that no ``ChildProcess/nextLine(timeout:)``
    /// took.
    public var stdoutData: Data
    /// The bytes written to stderr (when it was a pipe).
    public var stderrData: Data
    /// Killed (SIGKILL) because it outlived the time it was given.
    public var timedOut: Bool
    /// Seconds from the start to the exit.
    public var seconds: Double

    /// Creates an outcome.
    public init(
        status: Int32,
        signalled: Bool,
        stdoutData: Data = Data(),
        stderrData: Data = Data(),
        timedOut: Bool = false,
        seconds: Double = 0
    ) {
        self.status = status
        self.signalled = signalled
        self.stdoutData = stdoutData
        self.stderrData = stderrData
        self.timedOut = timedOut
        self.seconds = seconds
    }

    /// stdout as UTF-8 text.
    public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    /// stderr as UTF-8 text.
    public var stderr: String { String(decoding: stderrData, as: UTF8.self) }

    /// Killed by a signal other than a stop request, or exited with a trap's code (132
    /// SIGILL, 133 SIGTRAP, 134 SIGABRT, 135 SIGBUS, 136 SIGFPE, 139 SIGSEGV, as shells
    /// report them).
    public var isCrash: Bool {
        (signalled && status != SIGINT && status != SIGTERM && status != SIGKILL)
            || (!signalled && [132, 133, 134, 135, 136, 139].contains(status))
    }

    /// How it ended and the start of what it wrote, for a failed expectation.
    public var description: String {
        let end = signalled ? "signal \(status)" : "exit \(status)"
        return
            "\(end)\(timedOut ? " (timed out)" : ""); stdout \(stdout.prefix(300).debugDescription); stderr \(stderr.prefix(600).debugDescription)"
    }
}
