import Foundation
import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// One child's start and life: swift-subprocess's `run` with the standard streams asked
/// for, whose body reports the process id, feeds stdin and reads the pipes into a
/// ``Collected`` until they end.
struct Launch: Sendable {
    let configuration: Configuration
    let stdin: ChildProcess.Input
    let stdout: ChildProcess.Output
    let stderr: ChildProcess.Output
    let feed: AsyncStream<Data>?
    let collected: Collected
    let started: AsyncStream<Result<pid_t, any Error>>.Continuation

    /// Runs the child to its end (the pipes drained, the process reaped).
    func run() async -> Exit {
        let begin = ContinuousClock.now
        var exit: Exit
        do {
            switch try await withInput() {
            case .exited(let code):
                exit = Exit(status: code, signalled: false, started: begin, at: .now)
            case .signaled(let signal):
                exit = Exit(status: signal, signalled: true, started: begin, at: .now)
            }
        } catch {
            started.yield(.failure(error))
            exit = Exit(
                status: -1,
                signalled: false,
                started: begin,
                at: .now,
                failure: "\(error)"
            )
        }
        started.finish()
        collected.finish(exit)
        if let pid = collected.processIdentifier { RunningChildren.remove(pid) }
        return exit
    }

    // swift-subprocess types each stream's kind; these three steps pick them one by one.

    private func withInput() async throws -> TerminationStatus {
        switch stdin {
        case .data, .writer:
            return try await withOutput(CustomWriteInput.inputWriter)
        case .none:
            let null = try FileDescriptor.open("/dev/null", .readOnly, options: .closeOnExec)
            return try await withOutput(
                FileDescriptorInput.fileDescriptor(null, closeAfterSpawningProcess: true)
            )
        case .path(let path):
            let file = try FileDescriptor.open(FilePath(path), .readOnly, options: .closeOnExec)
            return try await withOutput(
                FileDescriptorInput.fileDescriptor(file, closeAfterSpawningProcess: true)
            )
        case .descriptor(let fd):
            return try await withOutput(
                FileDescriptorInput.fileDescriptor(
                    FileDescriptor(rawValue: fd),
                    closeAfterSpawningProcess: false
                )
            )
        }
    }

    private func withOutput<I: InputProtocol>(_ input: I) async throws -> TerminationStatus {
        if case .pipe = stdout { return try await withError(input, SequenceOutput.sequence) }
        let (fd, owned) = try Self.descriptor(for: stdout, standard: .standardOutput)
        return try await withError(
            input,
            FileDescriptorOutput.fileDescriptor(fd, closeAfterSpawningProcess: owned)
        )
    }

    private func withError<I: InputProtocol, O: OutputProtocol>(_ input: I, _ output: O)
        async throws -> TerminationStatus
    {
        if case .pipe = stderr { return try await execute(input, output, SequenceOutput.sequence) }
        let (fd, owned) = try Self.descriptor(for: stderr, standard: .standardError)
        return try await execute(
            input,
            output,
            FileDescriptorOutput.fileDescriptor(fd, closeAfterSpawningProcess: owned)
        )
    }

    private func execute<I: InputProtocol, O: OutputProtocol, E: ErrorOutputProtocol>(
        _ input: I,
        _ output: O,
        _ error: E
    ) async throws -> TerminationStatus {
        let result = try await Subprocess.run(
            configuration,
            input: input,
            output: output,
            error: error
        ) { execution in
            await serve(execution)
        }
        return result.terminationStatus
    }

    /// While the child runs: report its id, feed stdin, read stdout and stderr to their end.
    private func serve<I: InputProtocol, O: OutputProtocol, E: ErrorOutputProtocol>(
        _ execution: Execution<I, O, E>
    ) async {
        let pid = execution.processIdentifier.value
        RunningChildren.add(pid)
        collected.started(pid)
        started.yield(.success(pid))
        started.finish()
        let out = (execution as Any as? Execution<I, SequenceOutput, E>)?.standardOutput
        let err = (execution as Any as? Execution<I, O, SequenceOutput>)?.standardError
        let writer = (execution as Any as? Execution<CustomWriteInput, O, E>)?.standardInputWriter
        let feeding: Task<Void, Never>? = writer.map { writer in
            Task { [stdin, feed] in
                if case .data(let data) = stdin { _ = try? await writer.write(data) }
                if let feed {
                    for await chunk in feed {
                        guard (try? await writer.write(chunk)) != nil else { break }
                    }
                }
                try? await writer.finish()
            }
        }
        if out == nil { collected.endStdout() }
        await withTaskGroup(of: Void.self) { group in
            if let out {
                group.addTask { [collected] in
                    do {
                        for try await buffer in out { collected.append(buffer, to: .stdout) }
                    } catch {
                        collected.append(readFailure: error, of: "stdout")
                    }
                    collected.endStdout()
                }
            }
            if let err {
                group.addTask { [collected] in
                    do {
                        for try await buffer in err { collected.append(buffer, to: .stderr) }
                    } catch {
                        collected.append(readFailure: error, of: "stderr")
                    }
                }
            }
        }
        // The pipes ended: the child is gone (or closed them), so stop feeding it. With no
        // pipe to read, stdin is fed until the caller closes it (`wait` does).
        if out != nil || err != nil { feeding?.cancel() }
        await feeding?.value
    }

    /// The descriptor that `output` names, and whether it was opened here (and so is closed
    /// once the child has it).
    private static func descriptor(
        for output: ChildProcess.Output,
        standard: FileDescriptor
    ) throws -> (FileDescriptor, Bool) {
        switch output {
        case .pipe, .inherited:
            return (standard, false)
        case .discarded:
            return (try FileDescriptor.open("/dev/null", .writeOnly, options: .closeOnExec), true)
        case .path(let path):
            let file = try FileDescriptor.open(
                FilePath(path),
                .writeOnly,
                options: [.append, .create, .closeOnExec],
                permissions: [.ownerReadWrite, .groupRead, .otherRead]
            )
            return (file, true)
        case .descriptor(let fd):
            return (FileDescriptor(rawValue: fd), false)
        case .closedPipe:
            let pipe = try FileDescriptor.pipe()
            try pipe.readEnd.close()
            return (pipe.writeEnd, true)
        }
    }
}

/// What a child wrote to its pipes and how it ended, shared by its reader tasks and the
/// test that owns it.
final class Collected: Sendable {
    enum Stream { case stdout, stderr }

    /// What ``takeLine()`` found.
    enum Taken {
        case line(String)
        case ended
        case pending
    }

    private struct State {
        var processIdentifier: pid_t?
        var stdout: [UInt8] = []
        /// Bytes of `stdout` already taken as lines.
        var taken = 0
        var stdoutEnded = false
        var stderr: [UInt8] = []
        var exit: Exit?
        var timedOut = false
    }

    private let state = Mutex(State())

    func append(_ buffer: SubprocessOutputSequence.Buffer, to stream: Stream) {
        buffer.withUnsafeBytes { bytes in
            state.withLock {
                switch stream {
                case .stdout: $0.stdout.append(contentsOf: bytes)
                case .stderr: $0.stderr.append(contentsOf: bytes)
                }
            }
        }
    }

    func append(readFailure error: any Error, of stream: String) {
        state.withLock { $0.stderr += Array("\n[reading \(stream) failed: \(error)]\n".utf8) }
    }

    func started(_ pid: pid_t) { state.withLock { $0.processIdentifier = pid } }

    var processIdentifier: pid_t? { state.withLock { $0.processIdentifier } }

    func endStdout() { state.withLock { $0.stdoutEnded = true } }

    func markTimedOut() { state.withLock { $0.timedOut = true } }

    func finish(_ exit: Exit) {
        state.withLock {
            $0.exit = exit
            $0.stdoutEnded = true
            if let failure = exit.failure { $0.stderr += Array("\n[\(failure)]\n".utf8) }
        }
    }

    var hasExited: Bool { state.withLock { $0.exit != nil } }
    var stdoutEnded: Bool { state.withLock { $0.stdoutEnded } }

    func takeLine() -> Taken {
        state.withLock { state in
            let rest = state.stdout[state.taken...]
            if let newline = rest.firstIndex(of: 0x0A) {
                let line = String(decoding: rest[..<newline], as: UTF8.self)
                state.taken = newline + 1
                return .line(line)
            }
            return state.stdoutEnded ? .ended : .pending
        }
    }

    /// Every whole line of stdout so far.
    var allLines: [String] {
        state.withLock { state in
            var lines = state.stdout.split(separator: 0x0A, omittingEmptySubsequences: false)
            lines.removeLast()  // the part after the last newline: not a whole line yet
            return lines.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    func outcome(_ exit: Exit) -> ProcessOutcome {
        state.withLock { state in
            ProcessOutcome(
                status: exit.status,
                signalled: exit.signalled,
                stdoutData: Data(state.stdout[state.taken...]),
                stderrData: Data(state.stderr),
                timedOut: state.timedOut,
                seconds: ChildProcess.seconds(exit.at - exit.started)
            )
        }
    }
}

/// Names a descriptor leak before it does harm: a test helper that leaks a descriptor per
/// call (a relay's connections, an unclosed pipe) shows up as a clear failure instead of an
/// exhausted descriptor table many tests later. A whole test run, with every suite in one
/// process and its children and in-process servers, holds a few hundred at its peak.
enum DescriptorGuard {
    static let limit = 1_000

    static func check() throws {
        let open =
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        guard open <= limit else {
            throw ChildProcessError(
                "the test process holds \(open) open descriptors (more than \(limit)): a descriptor leak"
            )
        }
    }
}

/// The children now running, killed when the test process exits so none outlives it (a
/// server started for a whole run, a child whose test failed before it stopped it).
enum RunningChildren {
    private static let pids = Mutex<Set<pid_t>>([])

    private static let prepared: Bool = {
        // Writing to a child that has gone must fail with EPIPE, not end the test process;
        // children start with every signal at its default action all the same.
        signal(SIGPIPE, SIG_IGN)
        atexit { RunningChildren.killAll() }
        return true
    }()

    static func installExitHandler() { _ = prepared }

    static func add(_ pid: pid_t) { _ = pids.withLock { $0.insert(pid) } }

    static func remove(_ pid: pid_t) { _ = pids.withLock { $0.remove(pid) } }

    static func killAll() {
        for pid in pids.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
}
