import CommandSupport
import Foundation
import Models
import SuiteClient

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
        guard SuiteTool.executable(named: "scan") != nil else {
            throw SuiteClientError(
                .storage,
                "the suite's `scan` tool is needed to read a pass; it is neither beside reservations nor on PATH"
            )
        }
        // Bounded by the command's deadline: a stuck scan is stopped, not waited for.
        let run: SuiteTool.Run
        do {
            run = try SuiteTool.run(
                "scan",
                ["--format", "jsonl", "--quiet", "--", file],
                timeout: deadline
            )
        } catch {
            throw SuiteClientError(.storage, error.message)
        }
        let data = run.stdout
        let messages = run.stderr
        let status = run.status
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
        if run.signalled || ![0, 4].contains(status) {
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
}
