import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// How a finished command exited and what it printed.
struct CommandRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Finds the suite's built binaries and runs commands as a user runs them: real processes,
/// real pipes, real exit codes.
enum CommandRunner {
    /// The app `name`: the build products directory holds both this test bundle and the apps.
    static func builtBinary(_ name: String) -> URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent(name)
    }

    /// Starts `executable`, writes `stdin` (if any) and closes it; returns the process and its
    /// stdout and stderr pipes for the caller to read.
    static func start(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        stdin: Data? = nil
    ) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try launch(process)
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try? input.fileHandleForWriting.close()
        return (process, out, err)
    }

    /// Starts `process` as a shell would, with no signal blocked: a child inherits the
    /// signal mask of the thread that spawns it, and the test runner's threads block most
    /// signals (a SIGTSTP or SIGINT sent to the child would wait unseen).
    static func launch(_ process: Process) throws {
        // Foundation's Process.run() on Linux reads each /proc/self/fd entry with a 256-byte
        // over-read and can crash once about 1,350 descriptors are open
        // (swift-corelibs-foundation #5472): a leak in a test helper showed up as a SIGSEGV
        // in CI. Name the leak instead; this process normally holds under 100.
        let open =
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        if open > 600 {
            Issue.record(
                "the test process holds \(open) open descriptors: a leak (Process.run may crash)"
            )
        }
        var none = sigset_t()
        var saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try process.run()
    }

    /// Runs `executable` to its end; with `interruptAfter`, sends SIGINT after that many
    /// seconds.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        stdin: Data? = nil,
        interruptAfter: Double? = nil
    ) throws -> CommandRun {
        let (process, out, err) = try start(
            executable,
            arguments,
            environment: environment,
            stdin: stdin
        )
        if let interruptAfter {
            Thread.sleep(forTimeInterval: interruptAfter)
            kill(process.processIdentifier, SIGINT)
        }
        // Read both pipes concurrently so neither fills up and blocks the child.
        let errData = Mutexed<Data>(Data())
        let reader = Thread { errData.value = err.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errData.done { Thread.sleep(forTimeInterval: 0.01) }
        return CommandRun(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.value, as: UTF8.self)
        )
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

/// A value written once by a reader thread and read after it finishes.
final class Mutexed<T>: @unchecked Sendable {
    // Safe: `value` is written once by one thread before `done` is set, and read only after
    // the reader has seen `done` under the lock.
    private let lock = NSLock()
    private var stored: T
    private var finished = false
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set {
            lock.withLock {
                stored = newValue; finished = true
            }
        }
    }
    var done: Bool { lock.withLock { finished } }
}
