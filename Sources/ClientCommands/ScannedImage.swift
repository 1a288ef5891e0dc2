internal import CommandSupport
internal import Foundation
public import SuiteClient

/// The symbols in an image, read by the suite's `scan` tool as a child process (through
/// ``SuiteTool``), so the barcode and OCR libraries never load with a client app (they cost
/// tens of milliseconds at every start). `reservations show --from-image` and `catalog
/// lookup --from-image` pick what they need from what it finds.
public struct ScannedImage: Sendable {
    /// One symbol `scan --format jsonl` reported.
    public struct Symbol: Decodable, Sendable, Hashable {
        /// The symbology (`qrcode`, `ean13`, …).
        public var format: String
        /// The decoded text.
        public var text: String
        /// Whether the symbol carries GS1 data.
        public var gs1: Bool

        private enum CodingKeys: String, CodingKey { case format, text, gs1 }

        /// Decodes one of `scan`'s symbols (`gs1` false when absent).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            format = try container.decode(String.self, forKey: .format)
            text = try container.decode(String.self, forKey: .text)
            gs1 = try container.decodeIfPresent(Bool.self, forKey: .gs1) ?? false
        }
    }

    /// The symbols in the order `scan` reported them.
    public var symbols: [Symbol]
    /// Why `scan` failed (it exited other than 0 or 4, or was killed), or nil: a caller that
    /// found what it wanted among ``symbols`` may ignore it.
    public var failure: SuiteClientError?

    /// One line of `scan --format jsonl` (the fields used here).
    private struct Record: Decodable {
        var symbols: [Symbol]
        var error: String?
    }

    /// Runs `scan` on `file` for at most `timeout`.
    /// - Throws: ``SuiteClientError``: `unreadableInput` (no such readable file, `scan`
    ///   could not read it, or it did not finish in time), `storage` (`scan` is missing or
    ///   cannot be started).
    public init(file: String, timeout: Duration) throws(SuiteClientError) {
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
        var symbols: [Symbol] = []
        for line in run.stdout.split(separator: UInt8(ascii: "\n")) {
            guard let record = try? JSONDecoder().decode(Record.self, from: Data(line)) else {
                continue
            }
            if let error = record.error {
                throw SuiteClientError(.unreadableInput, "\(file): \(error)")
            }
            symbols += record.symbols
        }
        self.symbols = symbols
        if run.signalled || ![0, 4].contains(run.status) {
            let detail = String(decoding: run.stderr, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            failure = SuiteClientError(
                .storage,
                "scan failed on \(file) (\(run.signalled ? "signal" : "exit") \(run.status))\(detail.isEmpty ? "" : ": \(detail)")"
            )
        } else {
            failure = nil
        }
    }

    /// The error for an image where nothing usable was found: `scan`'s failure, else "no
    /// barcode found", else "no `wanted` (found …)" listing what was there.
    public func nothingFound(in file: String, wanted: String) -> SuiteClientError {
        if let failure { return failure }
        if symbols.isEmpty {
            return SuiteClientError(.unreadableInput, "\(file): no barcode or QR code found")
        }
        let seen = symbols.map { "\($0.format) \(String($0.text.prefix(60)).debugDescription)" }
        return SuiteClientError(
            .unreadableInput,
            "\(file): no \(wanted) in the image (found \(seen.joined(separator: ", ")))"
        )
    }
}
