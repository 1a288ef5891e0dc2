public import Foundation
import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started the way a shell starts one, waited for without blocking a thread.
///
/// Built on swift-subprocess: the child is spawned with no signal blocked and every signal
/// at its default action (a test runner's threads block most signals, and a child would
/// otherwise inherit that mask: a SIGINT or SIGTSTP sent to it would wait unseen), with no
/// descriptor of this process but its three standard ones. Its stdout and stderr pipes are
/// read to their end as it writes; stdin is fed while it runs. Waiting for it suspends the
/// calling task instead of holding one of the two threads of Swift's concurrency pool, so
/// a test run can wait on many children at once.
///
/// ``run(_:_:environment:stdin:stdout:stderr:timeout:)`` runs one to its end. ``start(_:_:environment:stdin:stdout:stderr:)``
/// returns a running child to read line by line (``nextLine(timeout:)``), signal
/// (``signal(_:)``, ``stop(with:timeout:)``) and wait for (``wait(timeout:)``). A child still
/// running when its `ChildProcess` is released, or when the test process exits, is killed.
public final class ChildProcess: Sendable {
    /// Where the child's stdin comes from.
    public enum Input: Sendable {
        /// `/dev/null`.
        case none
        /// These bytes, then the end of input.
        case data(Data)
        /// A file or device opened for reading (such as `/dev/zero`).
        case path(String)
        /// A descriptor of this process (such as a pseudo-terminal); left open.
        case descriptor(Int32)
        /// A pipe fed by ``ChildProcess/write(_:)`` until ``ChildProcess/finishInput()``.
        case writer
    }

    /// Where the child's stdout or stderr goes.
    public enum Output: Sendable {
        /// A pipe this process reads to its end: ``ChildProcess/nextLine(timeout:)`` and the
        /// outcome's data.
        case pipe
        /// `/dev/null`.
        case discarded
        /// A file or device opened for appending (created if missing), such as `/dev/full`.
        case path(String)
        /// A descriptor of this process (such as a pseudo-terminal); left open.
        case descriptor(Int32)
        /// A pipe whose reading end is closed before the child starts: its writes fail with
        /// EPIPE.
        case closedPipe
        /// This process's own stdout or stderr.
        case inherited
    }

    /// The child's process id (valid while ``isRunning``).
    public let processIdentifier: Int32
    /// The executable's file name, for messages.
    public let name: String

    private let collected: Collected
    private let exit: Task<Exit, Never>
    private let input: AsyncStream<Data>.Continuation?

    private init(
        processIdentifier: pid_t,
        name: String,
        collected: Collected,
        exit: Task<Exit, Never>,
        input: AsyncStream<Data>.Continuation?
    ) {
        self.processIdentifier = processIdentifier
        self.name = name
        self.collected = collected
        self.exit = exit
        self.input = input
    }

    deinit {
        input?.finish()
        if isRunning { kill(processIdentifier, SIGKILL) }
    }

    /// Runs `executable` to its end and returns how it ended and what it wrote. A child still
    /// running after `timeout` seconds is killed (SIGKILL) and reported with
    /// ``ProcessOutcome/timedOut``, so a hung child fails its test instead of hanging the run.
    /// - Parameter environment: the whole environment; nil inherits this process's.
    public static func run(
        _ executable: URL,
        _ arguments: [String] = [],
        environment: [String: String]? = nil,
        stdin: Input = .none,
        stdout: Output = .pipe,
        stderr: Output = .pipe,
        timeout: Double = 300
    ) async throws -> ProcessOutcome {
        let child = try await start(
            executable,
            arguments,
            environment: environment,
            stdin: stdin,
            stdout: stdout,
            stderr: stderr
        )
        return await child.wait(timeout: timeout)
    }

    /// Starts `executable` and returns once it runs (throws when it cannot be started).
    /// - Parameter environment: the whole environment; nil inherits this process's.
    public static func start(
        _ executable: URL,
        _ arguments: [String] = [],
        environment: [String: String]? = nil,
        stdin: Input = .none,
        stdout: Output = .pipe,
        stderr: Output = .pipe
    ) async throws -> ChildProcess {
        try DescriptorGuard.check()
        RunningChildren.installExitHandler()
        var feed: AsyncStream<Data>?
        var feeder: AsyncStream<Data>.Continuation?
        if case .writer = stdin {
            let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
            feed = stream
            feeder = continuation
        }
        // By key and value: swift-subprocess's raw-bytes form wants each entry terminated.
        let environmentValue: Environment =
            environment.map { variables in
                .custom(
                    Dictionary(
                        uniqueKeysWithValues: variables.compactMap { key, value in
                            Environment.Key(rawValue: key).map { ($0, value) }
                        }
                    )
                )
            } ?? .inherit
        let configuration = Configuration(
            executable: .path(FilePath(executable.path)),
            arguments: Arguments(arguments),
            environment: environmentValue
        )
        let collected = Collected()
        let (started, startedContinuation) = AsyncStream.makeStream(
            of: Result<pid_t, any Error>.self
        )
        let launch = Launch(
            configuration: configuration,
            stdin: stdin,
            stdout: stdout,
            stderr: stderr,
            feed: feed,
            collected: collected,
            started: startedContinuation
        )
        let exit = Task.detached { await launch.run() }
        var startedIterator = started.makeAsyncIterator()
        let pid: pid_t
        do {
            guard let first = await startedIterator.next() else {
                throw ChildProcessError("\(executable.path) did not start")
            }
            pid = try first.get()
        } catch {
            feeder?.finish()
            _ = await exit.value
            throw ChildProcessError("cannot start \(executable.path): \(error)")
        }
        return ChildProcess(
            processIdentifier: pid,
            name: executable.lastPathComponent,
            collected: collected,
            exit: exit,
            input: feeder
        )
    }

    /// Whether the child has not been seen to exit yet.
    public var isRunning: Bool { !collected.hasExited }

    /// Sends `signal` to the child if it still runs.
    public func signal(_ signal: Int32) {
        if isRunning { kill(processIdentifier, signal) }
    }

    /// Writes `data` to the child's stdin (started with ``Input/writer``), in order.
    public func write(_ data: Data) {
        input?.yield(data)
    }

    /// Closes the child's stdin (started with ``Input/writer``) after what was written.
    public func finishInput() {
        input?.finish()
    }

    /// The next line of stdout (without its newline), or nil at its end or after `timeout`
    /// seconds. Lines taken here are not in the outcome's stdout.
    public func nextLine(timeout: Double = 60) async -> String? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            switch collected.takeLine() {
            case .line(let line): return line
            case .ended: return nil
            case .pending:
                guard ContinuousClock.now < deadline else { return nil }
                try? await Task.sleep(for: Self.pollInterval)
            }
        }
    }

    /// Whether stdout (a pipe) has ended: what ``nextLine(timeout:)`` has not taken yet is all
    /// there will be.
    public var outputEnded: Bool { collected.stdoutEnded }

    /// Every whole line written to stdout so far, including those ``nextLine(timeout:)`` took.
    public var lines: [String] { collected.allLines }

    /// The first stdout line that begins with `prefix`, waiting up to `timeout` seconds for
    /// the child to write it; nil when its stdout ends or the time passes first.
    public func line(startingWith prefix: String, timeout: Double = 60) async -> String? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            if let line = collected.allLines.first(where: { $0.hasPrefix(prefix) }) { return line }
            guard !collected.stdoutEnded, ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: Self.pollInterval)
        }
    }

    /// Waits for the exit, closing stdin first (a child reading it to its end could not
    /// finish otherwise); a child still running after `timeout` seconds is killed (SIGKILL)
    /// and reported with ``ProcessOutcome/timedOut``.
    public func wait(timeout: Double = 60) async -> ProcessOutcome {
        input?.finish()
        let collected = collected
        let pid = processIdentifier
        let watchdog = Task {
            try await Task.sleep(for: .seconds(timeout))
            guard !collected.hasExited else { return }
            collected.markTimedOut()
            kill(pid, SIGKILL)
        }
        let exit = await exit.value
        watchdog.cancel()
        return collected.outcome(exit)
    }

    /// Sends `signal`, waits for the exit and returns the seconds that took and the outcome.
    /// A child still running `timeout` seconds after the signal is killed (SIGKILL, seen as
    /// signalled), so a test never hangs on one that ignores it.
    public func stop(with signal: Int32 = SIGTERM, timeout: Double = 30) async -> (
        seconds: Double, outcome: ProcessOutcome
    ) {
        let sent = ContinuousClock.now
        self.signal(signal)
        let outcome = await wait(timeout: timeout)
        let exited = await exit.value.at
        return (Self.seconds(exited - sent), outcome)
    }

    /// Waits (at most `timeout` seconds) until the child holds a descriptor whose
    /// `/proc/<pid>/fd` link starts with `prefix` (`anon_inode:inotify`: it watches files),
    /// so a test acts once the child is ready rather than after a guessed delay.
    public func waitForDescriptor(_ prefix: String, timeout: Double = 20) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(timeout)
        let directory = "/proc/\(processIdentifier)/fd"
        while ContinuousClock.now < deadline, isRunning {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names {
                let link = try? FileManager.default.destinationOfSymbolicLink(
                    atPath: "\(directory)/\(name)"
                )
                if link?.hasPrefix(prefix) == true { return true }
            }
            try? await Task.sleep(for: Self.pollInterval)
        }
        return false
    }

    /// Waits (at most `timeout` seconds) until the child is stopped by a signal (SIGTSTP,
    /// SIGSTOP): true when it is, false when it exited or the time passed first.
    public func waitUntilStopped(timeout: Double = 10) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline, isRunning {
            // /proc/<pid>/stat: "pid (comm) S ...": the state follows the last ')'.
            if let stat = try? String(
                contentsOfFile: "/proc/\(processIdentifier)/stat",
                encoding: .utf8
            ),
                let close = stat.lastIndex(of: ")")
            {
                let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
                if state == "T" { return true }
            }
            try? await Task.sleep(for: Self.pollInterval)
        }
        return false
    }

    /// How often a wait on the child's output or state looks again: far below what any test
    /// measures, far above a busy loop.
    static let pollInterval = Duration.milliseconds(5)

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Why a child process could not be run.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// What went wrong, naming the executable.
    public var description: String

    init(_ description: String) { self.description = description }
}

/// How the child ended, and when.
struct Exit: Sendable {
    var status: Int32
    var signalled: Bool
    var started: ContinuousClock.Instant
    var at: ContinuousClock.Instant
    /// Why swift-subprocess gave up on it (nil: it ran and was reaped).
    var failure: String?
}
