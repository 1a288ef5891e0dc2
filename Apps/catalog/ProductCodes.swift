import CommandSupport
import Foundation
import Models
import SuiteClient

/// Reads product codes from an image with the suite's `scan` tool as a child process, so
/// the barcode and OCR libraries never load with `catalog` (they cost tens of milliseconds
/// at every start).
enum ProductCodes {
    /// The first GTIN found, the symbol it came from, and any other GTINs in the image.
    struct Found {
        var gtin: GTIN
        var format: String
        var text: String
        var others: [GTIN]
    }

    /// The GTINs in the image `file`, in the order `scan` reports the symbols.
    /// - Throws: ``SuiteClientError``: `unreadableInput` (no such file, not an image, no
    ///   product code in it), `storage` (`scan` is missing or failed).
    static func read(_ file: String, timeout: Duration) throws(SuiteClientError) -> Found {
        guard FileManager.default.isReadableFile(atPath: file) else {
            throw SuiteClientError(.unreadableInput, "\(file): no such readable file")
        }
        let run: SuiteTool.Run
        do {
            run = try SuiteTool.run(
                "scan",
                ["--format", "jsonl", "--quiet", "--", file],
                timeout: timeout
            )
        } catch {
            throw SuiteClientError(.storage, "cannot read \(file): \(error.message)")
        }
        if run.timedOut {
            throw SuiteClientError(
                .unreadableInput,
                "\(file): scan did not finish within the command's deadline (--deadline)"
            )
        }
        var found: [(gtin: GTIN, format: String, text: String)] = []
        var seen: [String] = []
        for line in run.stdout.split(separator: UInt8(ascii: "\n")) {
            guard let record = try? JSONDecoder().decode(Record.self, from: Data(line)) else {
                continue
            }
            if let error = record.error {
                throw SuiteClientError(.unreadableInput, "\(file): \(error)")
            }
            for symbol in record.symbols {
                if let gtin = ProductReference.gtin(
                    inSymbol: symbol.text,
                    format: symbol.format,
                    isGS1: symbol.gs1
                ) {
                    found.append((gtin, symbol.format, symbol.text))
                } else {
                    seen.append(
                        "\(symbol.format) \(String(symbol.text.prefix(60)).debugDescription)"
                    )
                }
            }
        }
        if let first = found.first {
            var others: [GTIN] = []
            for item in found.dropFirst()
            where item.gtin != first.gtin && !others.contains(item.gtin) {
                others.append(item.gtin)
            }
            return Found(gtin: first.gtin, format: first.format, text: first.text, others: others)
        }
        if run.signalled || ![0, 4].contains(run.status) {
            let detail = String(decoding: run.stderr, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw SuiteClientError(
                .storage,
                "scan failed on \(file) (\(run.signalled ? "signal" : "exit") \(run.status))\(detail.isEmpty ? "" : ": \(detail)")"
            )
        }
        if seen.isEmpty {
            throw SuiteClientError(.unreadableInput, "\(file): no barcode found in the image")
        }
        throw SuiteClientError(
            .unreadableInput,
            "\(file): no product code (GTIN) in the image (found \(seen.joined(separator: ", ")))"
        )
    }

    /// One line of `scan --format jsonl` (the fields used here).
    struct Record: Decodable {
        struct Symbol: Decodable {
            var format: String
            var text: String
            var gs1: Bool
        }
        var symbols: [Symbol]
        var error: String?
    }
}
