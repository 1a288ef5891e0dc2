import ChildProcesses
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Finds the suite's built binaries and runs commands as a user runs them: real processes,
/// real pipes, real exit codes. Every child starts through ChildProcesses, so a test waits
/// for it without holding one of the concurrency pool's threads.
enum CommandRunner {
    /// The app `name`: the build products directory holds both this test bundle and the apps.
    static func builtBinary(_ name: String) -> URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent(name)
    }

    /// Starts `executable` with `stdin` (or nothing) on a pipe, then the end of its input.
    static func start(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        stdin: Data? = nil
    ) async throws -> ChildProcess {
        try await ChildProcess.start(
            executable,
            arguments,
            environment: environment,
            stdin: .data(stdin ?? Data())
        )
    }

    /// Runs `executable` to its end, killing it after `timeout` seconds; with
    /// `interruptAfter`, sends SIGINT after that many seconds.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        stdin: Data? = nil,
        interruptAfter: Double? = nil,
        timeout: Double = 300
    ) async throws -> ProcessOutcome {
        let child = try await start(
            executable,
            arguments,
            environment: environment,
            stdin: stdin
        )
        if let interruptAfter {
            try await Task.sleep(for: .seconds(interruptAfter))
            child.signal(SIGINT)
        }
        return await child.wait(timeout: timeout)
    }

    /// A new empty directory under the system's temporary directory, named `prefix-<uuid>`.
    static func temporaryDirectory(prefix: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(prefix)-\(UUID().uuidString)",
            isDirectory: true
        )
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}
