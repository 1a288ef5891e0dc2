import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How a process ended, told apart from a crash.
struct Outcome: CustomStringConvertible {
    var status: Int32
    var signalled: Bool
    var stdout: String
    var stderr: String
    /// stdout's bytes as written (binary output).
    var stdoutData = Data()

    /// Killed by a signal, or exited with a trap's code (132 SIGILL, 133 SIGTRAP, 134 SIGABRT,
    /// 139 SIGSEGV, as shells report them).
    var isCrash: Bool {
        (signalled && status != SIGINT && status != SIGTERM && status != SIGKILL)
            || [132, 133, 134, 135, 136, 139].contains(status)
    }

    var description: String {
        "\(signalled ? "signal" : "exit") \(status); stdout \(stdout.prefix(300).debugDescription); stderr \(stderr.prefix(600).debugDescription)"
    }
}

/// Real processes with the standard streams a hostile machine gives them: a full disk, a
/// closed descriptor, a reader that went away.
enum Processes {
    /// Where stdout goes.
    enum Sink {
        /// A pipe the test reads.
        case pipe
        /// A file or device, such as /dev/full.
        case path(String)
        /// A pipe whose reading end is closed before the process starts (EPIPE).
        case closedPipe
    }

    /// Runs `executable` with `arguments`; `shellRedirect` (such as `>&-` or `<&-`) is applied
    /// by /bin/sh around it. Reads stderr (and stdout for `.pipe`) to the end.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        stdin: Data? = nil,
        stdinPath: String? = nil,
        stdout sink: Sink = .pipe,
        shellRedirect: String? = nil
    ) throws -> Outcome {
        let process = Process()
        if let shellRedirect {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments =
                ["-c", "exec \"$0\" \"$@\" \(shellRedirect)", executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        if let environment { process.environment = environment }
        let err = Pipe()
        process.standardError = err
        var out: Pipe?
        switch sink {
        case .pipe:
            out = Pipe()
            process.standardOutput = out
        case .path(let path):
            process.standardOutput = FileHandle(forWritingAtPath: path)
        case .closedPipe:
            let pipe = Pipe()
            try pipe.fileHandleForReading.close()
            process.standardOutput = pipe.fileHandleForWriting
        }
        let input = Pipe()
        if let stdinPath {
            process.standardInput = FileHandle(forReadingAtPath: stdinPath)
        } else {
            process.standardInput = input
        }
        try CommandRunner.launch(process)
        if stdinPath == nil {
            if let stdin { try? input.fileHandleForWriting.write(contentsOf: stdin) }
            try? input.fileHandleForWriting.close()
        }
        let errData = Mutexed<Data>(Data())
        let read = DispatchSemaphore(value: 0)
        let reader = Thread {
            errData.value = err.fileHandleForReading.readDataToEndOfFile()
            read.signal()
        }
        reader.start()
        let outData = out?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        read.wait()
        return Outcome(
            status: process.terminationStatus,
            signalled: process.terminationReason == .uncaughtSignal,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.value, as: UTF8.self),
            stdoutData: outData
        )
    }

    /// Runs a tool from PATH and returns its stdout; throws when it fails.
    @discardableResult
    static func tool(_ name: String, _ arguments: [String], stdin: Data? = nil) throws -> Data {
        let outcome = try run(
            URL(fileURLWithPath: "/usr/bin/env"),
            [name] + arguments,
            stdin: stdin
        )
        guard outcome.status == 0, !outcome.signalled else {
            throw CommandError(
                description: "\(name) \(arguments.joined(separator: " ")): \(outcome)"
            )
        }
        return outcome.stdoutData
    }

    struct CommandError: Error, CustomStringConvertible {
        var description: String
    }
}

/// A child process whose output is read line by line as it comes.
final class LiveProcess {
    let process = Process()
    private let out = Pipe()
    private let err = Pipe()
    private let exited = DispatchSemaphore(value: 0)
    private var buffer: [UInt8] = []

    init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws {
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try CommandRunner.launch(process)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Waits (at most `timeout` seconds) until the process holds a descriptor whose
    /// `/proc/<pid>/fd` link starts with `prefix` (`anon_inode:inotify`: it watches files),
    /// so a test acts once the child is ready rather than after a guessed delay.
    func waitForDescriptor(_ prefix: String, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let directory = "/proc/\(process.processIdentifier)/fd"
        while Date() < deadline, process.isRunning {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names {
                let link = try? FileManager.default.destinationOfSymbolicLink(
                    atPath: "\(directory)/\(name)"
                )
                if link?.hasPrefix(prefix) == true { return true }
            }
            usleep(5_000)
        }
        return false
    }

    /// The next line of stdout, or nil at its end or after `timeout` seconds.
    func nextLine(timeout: Double = 60) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = out.fileHandleForReading.fileDescriptor
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// Sends `signal`, waits for the exit and returns the seconds it took and the rest of the
    /// output. A child still running after `timeout` seconds is killed (SIGKILL, seen as
    /// signalled), so a test never hangs on one that ignores the signal.
    func stop(with signal: Int32, timeout: Double = 30) -> (seconds: Double, outcome: Outcome) {
        let start = Date()
        kill(process.processIdentifier, signal)
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(start)
        let rest = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        let pending = String(decoding: buffer, as: UTF8.self)
        return (
            seconds,
            Outcome(
                status: process.terminationStatus,
                signalled: process.terminationReason == .uncaughtSignal,
                stdout: pending + String(decoding: rest, as: UTF8.self),
                stderr: String(decoding: errors, as: UTF8.self)
            )
        )
    }

    /// Waits for the exit (at most `timeout` seconds; then kills) and returns the outcome.
    func wait(timeout: Double = 60) -> Outcome {
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let rest = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        return Outcome(
            status: process.terminationStatus,
            signalled: process.terminationReason == .uncaughtSignal,
            stdout: String(decoding: buffer, as: UTF8.self) + String(decoding: rest, as: UTF8.self),
            stderr: String(decoding: errors, as: UTF8.self)
        )
    }
}

/// CRC-32 (IEEE, as zlib), to forge store files whose checksums hold.
enum CRC32 {
    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
