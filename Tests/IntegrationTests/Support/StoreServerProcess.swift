import ChildProcesses
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The real `store-server` binary as a child process on a SQLite file, with the demo data,
/// on port 0 (or a given port, for a restart), as a user would run it.
final class StoreServerProcess: Sendable {
    let child: ChildProcess
    let port: Int
    let database: URL
    let log: URL

    var url: String { "http://127.0.0.1:\(port)" }

    /// Starts the server and waits (up to `timeout` seconds) for its `listening on` line. A
    /// new database starts as a copy of the run's seeded demo database (``DemoDatabase``); an
    /// existing one (a restart) is served as it is.
    init(database: URL, port: Int = 0, timeout: Double = 120) async throws {
        self.database = database
        log = database.deletingPathExtension().appendingPathExtension("log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        if !FileManager.default.fileExists(atPath: database.path) {
            try await DemoDatabase.copy(to: database)
        }
        var environment = FixedClock.applied(to: ProcessInfo.processInfo.environment)
        environment["SHOPFLOOR_HOME"] = database.deletingLastPathComponent().path
        child = try await ChildProcess.start(
            CommandRunner.builtBinary("store-server"),
            [
                "serve", "--port", String(port), "--demo-data", "--database", database.path,
                "--insecure-password-cost-for-tests", "--password-cost",
                String(DemoDatabase.passwordCost),
            ],
            environment: environment,
            stdout: .pipe,
            stderr: .path(log.path)
        )
        let line = await child.nextLine(timeout: timeout) ?? ""
        guard let range = line.range(of: "listening on http://"),
            let found = Int(line[range.upperBound...].split(separator: ":").last ?? "")
        else {
            let outcome = await child.stop(with: SIGKILL).outcome
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw ServerStartError(
                message:
                    "store-server did not start (\(outcome)); first line '\(line)'; log: \(text.suffix(2000))"
            )
        }
        self.port = found
    }

    /// The directory that holds the database (and the server's log).
    var directory: URL { database.deletingLastPathComponent() }

    /// A server on a fresh copy of the demo database in a new temporary directory named
    /// `prefix-<uuid>`; ``discard()`` stops it and removes the directory.
    static func scratch(_ prefix: String) async throws -> StoreServerProcess {
        let directory = try CommandRunner.temporaryDirectory(prefix: prefix)
        do {
            return try await StoreServerProcess(
                database: directory.appendingPathComponent("s.sqlite")
            )
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Sends SIGTERM and removes the server's directory (for a `defer` after ``scratch(_:)``).
    func discard() {
        terminate()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server with SIGTERM and waits for it to exit.
    func stop() async {
        guard child.isRunning else { return }
        _ = await child.stop(with: SIGTERM)
    }

    /// Sends SIGTERM without waiting (for a `defer`, where nothing can be awaited).
    func terminate() { child.signal(SIGTERM) }

    /// Runs a `store-server` admin command on the same database.
    func admin(_ arguments: [String]) async throws -> ProcessOutcome {
        try await CommandRunner.run(
            CommandRunner.builtBinary("store-server"),
            arguments + ["--database", database.path]
        )
    }

    deinit { terminate() }
}

/// The demo data, seeded once per test run into a SQLite file by the `store-server` binary
/// (`migrate`, then `seed --demo`), then copied for each server a test starts: a copy takes
/// milliseconds, a debug build's seeding seconds (StoreServerTests copies its templates the
/// same way).
enum DemoDatabase {
    /// The low password cost the tests use (the production default is 600,000).
    static let passwordCost = 1_000

    static let directory: URL = {
        let directory = try! CommandRunner.temporaryDirectory(prefix: "integration-demo")
        atexit { try? FileManager.default.removeItem(at: DemoDatabase.directory) }
        return directory
    }()

    private static let template = Task<URL, any Error> {
        let file = directory.appendingPathComponent("demo.sqlite")
        // Seeded around the fixed clock's day, like every server of the run.
        var environment = FixedClock.applied(to: ProcessInfo.processInfo.environment)
        environment["SHOPFLOOR_HOME"] = directory.path
        // Only seed hashes passwords (the demo users'), so only seed takes their cost.
        let cost = ["--insecure-password-cost-for-tests", "--password-cost", String(passwordCost)]
        for step in [["migrate"], ["seed", "--demo"] + cost] {
            let outcome = try await CommandRunner.run(
                CommandRunner.builtBinary("store-server"),
                step + ["--database", file.path],
                environment: environment
            )
            guard outcome.status == 0, !outcome.signalled else {
                throw ServerStartError(
                    message: "store-server \(step.joined(separator: " ")): \(outcome)"
                )
            }
        }
        return file
    }

    /// Copies the seeded database (and its write-ahead log, if one is left) to `database`.
    static func copy(to database: URL) async throws {
        let template = try await template.value
        try FileManager.default.copyItem(at: template, to: database)
        for suffix in ["-wal", "-shm"] {
            let side = URL(fileURLWithPath: template.path + suffix)
            if FileManager.default.fileExists(atPath: side.path) {
                try FileManager.default.copyItem(
                    at: side,
                    to: URL(fileURLWithPath: database.path + suffix)
                )
            }
        }
    }
}

struct ServerStartError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
