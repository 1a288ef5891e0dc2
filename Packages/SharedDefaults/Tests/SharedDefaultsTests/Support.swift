import ChildProcesses
import Foundation
import InMemoryLogging
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

/// Collects log messages (swift-log's `InMemoryLogHandler`) so tests can check what the
/// store reported.
struct LogCollector: Sendable {
    let handler = InMemoryLogHandler()

    var logger: Logger {
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .debug
        return logger
    }

    /// Level, message and metadata of each entry, oldest first.
    var entries: [(Logger.Level, String, Logger.Metadata)] {
        handler.entries.map { ($0.level, "\($0.message)", $0.metadata) }
    }
}

/// The stress tool, built next to the test bundle in the same products directory.
let stressToolURL: URL = {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return executable.deletingLastPathComponent().appendingPathComponent("SharedDefaultsStressTool")
}()

/// Starts the stress tool with `arguments` on the suite containers under `root` (its stderr
/// is the test's); with `input`, its stdin is a pipe the test writes.
func stressTool(_ arguments: [String], root: TemporaryRoot, input: Bool = false) async throws
    -> ChildProcess
{
    var environment = ProcessInfo.processInfo.environment
    environment["SHOPFLOOR_HOME"] = root.path
    return try await ChildProcess.start(
        stressToolURL,
        arguments,
        environment: environment,
        stdin: input ? .writer : .none,
        stderr: .inherited
    )
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
