public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs another tool of the suite (such as `scan`) as a child process, so an app keeps that
/// tool's heavy libraries (barcode and OCR engines) off its own start path.
///
/// The tool is found beside the running executable, else on `PATH`. The child gets no stdin,
/// both its pipes are read to the end (neither can fill up), it is sent SIGTERM when the
/// timeout passes or when this process receives a stop signal (``StopSignal``), and its
/// exit is waited for: no child outlives the call.
public enum SuiteTool {
    /// What a finished child printed and how it ended.
    public struct Run: Sendable {
        /// The exit status, or the signal number when ``signalled``.
        public var status: Int32
        /// Whether a signal ended the child.
        public var signalled: Bool
        /// Its stdout.
        public var stdout: Data
        /// Its stderr.
        public var stderr: Data
        /// Whether the timeout stopped it.
        public var timedOut: Bool
    }

    /// Why a tool could not be run.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong, naming the tool.
        public var message: String
        /// The message.
        public var description: String { message }
    }

    /// The tool `name` beside this executable, else the first on `PATH`; nil when neither.
    public static func executable(named name: String) -> URL? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if length > 0 {
            let own = String(
                decoding: buffer[..<length].map { UInt8(bitPattern: $0) },
                as: UTF8.self
            )
            let beside = URL(fileURLWithPath: own).deletingLastPathComponent()
                .appendingPathComponent(name)
            if access(beside.path, X_OK) == 0 { return beside }
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if access(candidate.path, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Runs the suite's tool `name` with `arguments` to its end, at most `timeout`.
    /// - Throws: ``Failure`` when the tool is missing or cannot be started.
    public static func run(_ name: String, _ arguments: [String], timeout: Duration)
        throws(Failure) -> Run
    {
        guard let tool = executable(named: name) else {
            throw Failure(
                message:
                    "the suite's `\(name)` tool is needed; it is neither beside this program nor on PATH"
            )
        }
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw Failure(
                message: "cannot start \(tool.path): \((error as NSError).localizedDescription)"
            )
        }
        let pid = process.processIdentifier
        let child = ChildState()
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let (seconds, attoseconds) = max(timeout, .zero).components
        timer.schedule(
            deadline: .now()
                + .milliseconds(Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
        )
        timer.setEventHandler { child.signal(pid, timeout: true) }
        timer.resume()
        // Not after the child is reaped: its pid may belong to another process by then.
        StopSignal.onStop { child.signal(pid, timeout: false) }
        let errors = PipeReader(err.fileHandleForReading)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        child.exited()
        timer.cancel()
        return Run(
            status: process.terminationStatus,
            signalled: process.terminationReason == .uncaughtSignal,
            stdout: data,
            stderr: errors.wait(),
            timedOut: child.timedOut
        )
    }
}

/// Whether the child has been reaped (no signal may be sent then: its pid may belong to
/// another process) and whether the timeout stopped it.
private final class ChildState: Sendable {
    private let state = Mutex((exited: false, timedOut: false))

    /// Sends SIGTERM unless the child has been reaped.
    func signal(_ pid: pid_t, timeout: Bool) {
        state.withLock { state in
            guard !state.exited else { return }
            if timeout { state.timedOut = true }
            kill(pid, SIGTERM)
        }
    }

    func exited() { state.withLock { $0.exited = true } }

    var timedOut: Bool { state.withLock { $0.timedOut } }
}

/// Reads a pipe to its end on another thread (so neither of a child's pipes fills up).
private final class PipeReader: @unchecked Sendable {
    // Safe: `data` is written once by the reader thread before the semaphore is signalled,
    // and read only after waiting on it.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
