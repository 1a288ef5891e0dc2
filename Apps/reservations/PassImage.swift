import Foundation
import Models
import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a customer's pass with the suite's `scan` tool as a child process, so the barcode
/// and OCR libraries never load with `reservations` (they cost tens of milliseconds at every
/// start).
enum PassImage {
    /// The confirmation code on the pass in `file`: the first symbol that is a code or a
    /// `shopfloor://reservations/CODE` payload.
    /// - Throws: ``SuiteClientError``: `unreadableInput` (no such file, no code on the pass),
    ///   `storage` (`scan` is missing or failed).
    static func code(in file: String, deadline: Duration) throws(SuiteClientError)
        -> ConfirmationCode
    {
        guard FileManager.default.isReadableFile(atPath: file) else {
            throw SuiteClientError(.unreadableInput, "\(file): no such readable file")
        }
        guard let scan = scanExecutable() else {
            throw SuiteClientError(
                .storage,
                "the suite's `scan` tool is needed to read a pass; it is neither beside reservations nor on PATH"
            )
        }
        let process = Process()
        process.executableURL = scan
        process.arguments = ["--format", "jsonl", "--quiet", "--", file]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw SuiteClientError(
                .storage,
                "cannot start \(scan.path): \((error as NSError).localizedDescription)"
            )
        }
        // Bounded by the command's deadline: a stuck scan is stopped, not waited for.
        let pid = process.processIdentifier
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .milliseconds(Int(deadline.components.seconds * 1000)))
        timer.setEventHandler { kill(pid, SIGTERM) }
        timer.resume()
        let errors = ReadAll(err.fileHandleForReading)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        timer.cancel()
        let messages = errors.wait()
        let status = process.terminationStatus
        var seen: [String] = []
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let record = try? JSONDecoder().decode(Record.self, from: Data(line)) else {
                continue
            }
            if let error = record.error {
                throw SuiteClientError(.unreadableInput, "\(file): \(error)")
            }
            for symbol in record.symbols {
                if let code = try? ConfirmationCode(passPayload: symbol.text) { return code }
                seen.append("\(symbol.format) '\(symbol.text.prefix(60))'")
            }
        }
        if process.terminationReason == .uncaughtSignal || ![0, 4].contains(status) {
            let detail = String(decoding: messages, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw SuiteClientError(
                .storage,
                "scan failed on \(file) (exit \(status))\(detail.isEmpty ? "" : ": \(detail)")"
            )
        }
        if seen.isEmpty {
            throw SuiteClientError(
                .unreadableInput,
                "\(file): no barcode or QR code found on the pass"
            )
        }
        throw SuiteClientError(
            .unreadableInput,
            "\(file): no reservation code on the pass (found \(seen.joined(separator: ", ")))"
        )
    }

    private struct Record: Decodable {
        struct Symbol: Decodable {
            var format: String
            var text: String
        }
        var symbols: [Symbol]
        var error: String?
    }

    /// `scan` beside this executable, else the first on PATH.
    static func scanExecutable() -> URL? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if length > 0 {
            let own = String(
                decoding: buffer[..<length].map { UInt8(bitPattern: $0) },
                as: UTF8.self
            )
            let beside = URL(fileURLWithPath: own).deletingLastPathComponent()
                .appendingPathComponent("scan")
            if access(beside.path, X_OK) == 0 { return beside }
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("scan")
            if access(candidate.path, X_OK) == 0 { return candidate }
        }
        return nil
    }
}

/// Reads a pipe to its end on another thread (so neither of a child's pipes fills up).
private final class ReadAll: @unchecked Sendable {
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
