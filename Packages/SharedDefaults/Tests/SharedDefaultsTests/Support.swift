import Foundation
import Logging
import SharedDefaults
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh container root under the system's temporary directory, removed on deinit.
final class TemporaryRoot {
    let url: URL
    var path: String { url.path }

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("shared-defaults-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        chmod(url.path, 0o700)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func store(
        _ suite: String = "test",
        refresh: SharedStore.RefreshPolicy = .notifications,
        logger: Logger = quietLogger
    ) throws
        -> SharedStore
    {
        try SharedStore(suite: suite, root: url, refresh: refresh, logger: logger)
    }

    func files(in suite: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.appendingPathComponent(suite).path)
            .sorted()
    }
}

let quietLogger: Logger = {
    var logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    logger.logLevel = .critical
    return logger
}()

/// Collects log messages so tests can check what the store reported.
final class LogCollector: Sendable {
    let messages = Mutex<[(Logger.Level, String, Logger.Metadata)]>([])

    var logger: Logger {
        var logger = Logger(label: "test") { _ in Handler(collector: self) }
        logger.logLevel = .debug
        return logger
    }

    var entries: [(Logger.Level, String, Logger.Metadata)] { messages.withLock { $0 } }

    struct Handler: LogHandler {
        let collector: LogCollector
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
            collector.messages.withLock { $0.append((event.level, "\(event.message)", merged)) }
        }
    }
}

/// The stress tool, built next to the test bundle in the same products directory.
let stressToolURL: URL = {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return executable.deletingLastPathComponent().appendingPathComponent("SharedDefaultsStressTool")
}()

/// A child process running the stress tool, with its stdout read line by line.
final class Child {
    let process = Process()
    private let output = Pipe()
    private var buffer: [UInt8] = []
    private var eof = false

    /// The child's stdin, when it was started with `input: true`.
    let input: Pipe?

    init(_ arguments: [String], root: TemporaryRoot, input: Bool = false) throws {
        process.executableURL = stressToolURL
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["SHOPFLOOR_HOME"] = root.path
        process.environment = environment
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        self.input = input ? Pipe() : nil
        if let pipe = self.input { process.standardInput = pipe }
        // A child inherits the signal mask of the thread that spawns it, and the test
        // runner's threads block most signals: spawned with none blocked, as from a shell,
        // so that signals sent to it (SIGTSTP) act as they would for a user.
        var none = sigset_t()
        var saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try process.run()
    }

    /// Writes `text` to the child's stdin.
    func send(_ text: String) {
        input?.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Waits until the child is stopped (by a signal), without reaping it: true when it is,
    /// false when it exited instead.
    func waitUntilStopped() -> Bool {
        var info = siginfo_t()
        while waitid(P_PID, id_t(process.processIdentifier), &info, WSTOPPED | WEXITED | WNOWAIT)
            != 0
        {
            if errno != EINTR { return false }
        }
        return info.si_code == CLD_STOPPED
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The next line, or nil at end of output or after `timeout` seconds.
    func nextLine(timeout: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if eof { return nil }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var descriptor = pollfd(
                fd: output.fileHandleForReading.fileDescriptor,
                events: Int16(POLLIN),
                revents: 0
            )
            let ready = poll(&descriptor, 1, Int32(remaining * 1000) + 1)
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(descriptor.fd, &chunk, chunk.count)
            if count <= 0 { eof = true } else { buffer.append(contentsOf: chunk[..<count]) }
        }
    }

    /// Every remaining line until end of output.
    func remainingLines() -> [String] {
        var lines: [String] = []
        while let line = nextLine(timeout: 30) { lines.append(line) }
        return lines
    }

    func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The exit status, or nil (and the child killed) when it has not exited after
    /// `timeout` seconds.
    func waitForExit(timeout: Double) -> Int32? {
        let exited = DispatchSemaphore(value: 0)
        let process = process
        Thread {
            process.waitUntilExit()
            exited.signal()
        }.start()
        guard exited.wait(timeout: .now() + timeout) == .success else {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
            return nil
        }
        return process.terminationStatus
    }
}

/// The kernel's file locks held by `pid` (lines of /proc/locks naming it as holder).
func fileLocks(of pid: Int32) throws -> [String] {
    let table = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
    return table.split(separator: "\n").map(String.init).filter { line in
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a waiter has "->").
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        return !fields.contains("->") && fields.count > 4 && fields[4] == "\(pid)"
    }
}

/// Waits (polling) until `condition` holds or `timeout` passes. It suspends between checks, so
/// the work it waits for (a watcher task, a notification) gets a thread even when every test
/// of the run shares two cores; it never blocks one.
func eventually(timeout: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

/// The first element of an async sequence, or nil after `timeout` seconds.
func first<S: AsyncSequence & Sendable>(of sequence: S, timeout: Double = 10) async -> S.Element?
where S.Element: Sendable {
    await withTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            var iterator = sequence.makeAsyncIterator()
            return try? await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(timeout))
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}
