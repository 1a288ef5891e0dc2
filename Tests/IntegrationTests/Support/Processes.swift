import ChildProcesses
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Real processes with the standard streams a hostile machine gives them: a full disk, a
/// closed descriptor, a reader that went away.
enum Processes {
    /// Runs `executable` with `arguments`; `shellRedirect` (such as `>&-` or `<&-`) is applied
    /// by /bin/sh around it. Reads stderr (and stdout for `.pipe`) to the end.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        stdin: Data? = nil,
        stdinPath: String? = nil,
        stdout: ChildProcess.Output = .pipe,
        shellRedirect: String? = nil
    ) async throws -> ProcessOutcome {
        var program = executable
        var argv = arguments
        if let shellRedirect {
            program = URL(fileURLWithPath: "/bin/sh")
            argv = ["-c", "exec \"$0\" \"$@\" \(shellRedirect)", executable.path] + arguments
        }
        return try await ChildProcess.run(
            program,
            argv,
            environment: environment,
            stdin: stdinPath.map { .path($0) } ?? .data(stdin ?? Data()),
            stdout: stdout
        )
    }

    /// Runs a tool from PATH and returns its stdout; throws when it fails.
    @discardableResult
    static func tool(_ name: String, _ arguments: [String], stdin: Data? = nil) async throws
        -> Data
    {
        let outcome = try await run(
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
