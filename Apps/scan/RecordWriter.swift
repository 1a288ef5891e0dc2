import CommandSupport
import Foundation
import Models
import Scanner

#if canImport(Glibc)
    import Glibc
#endif

/// Writes records to stdout in the chosen format: each record in one checked write, as soon
/// as it is ready (a reader sees it at once, a stop signal or a kill never cuts one, and
/// nothing waits in a buffer); a failed write ends the scan with exit 1, or 141 for a closed
/// pipe. Text read from images reaches a terminal only through `TextSafety.terminal`: a
/// barcode holding an escape sequence cannot set the title or move the cursor (issue 26).
final class RecordWriter {
    let format: OutputFormat
    private let encoder = JSONOutput.encoder()
    /// Whether text output goes to a terminal (escaped) rather than a pipe (as zbarimg's).
    private let toTerminal: Bool

    init(format: OutputFormat, toTerminal: Bool = Console.stdoutIsTerminal) {
        self.format = format
        self.toTerminal = toTerminal
    }

    func begin() throws {
        if format == .csv { try out("file,format,text\n") }
    }

    func write(_ record: ScanRecord) throws {
        try append(record)
        try flush()
    }

    private func append(_ record: ScanRecord) throws {
        switch format {
        case .text:
            for symbol in record.symbols {
                try out("\(symbol.symbology.zbarLabel):\(shown(symbol.text))\n")
            }
            try out(shown(TextOutput.text(record), multiline: true))
        case .csv:
            for symbol in record.symbols {
                try out(
                    "\(Self.csv(record.file)),\(symbol.symbology.rawValue),\(Self.csv(symbol.text))\n"
                )
            }
            try out(TextOutput.csv(record))
        case .jsonl:
            let report = ScanReport(
                file: record.file,
                frame: record.frame,
                barcodes: record.symbols,
                text: record.text,
                textRequested: record.text != nil || record.textError != nil,
                textError: record.textError?.description,
                error: record.error?.description
            )
            buffer.append(contentsOf: try encoder.encode(report))
            try out("\n")
        }
    }

    private var buffer: [UInt8] = []

    /// `text` as it may be shown: escaped for a terminal, as read for a pipe.
    private func shown(_ text: String, multiline: Bool = false) -> String {
        toTerminal ? TextSafety.terminal(text, multiline: multiline) : text
    }

    /// Writes what is buffered (the CSV header of an empty run).
    func end() throws { try flush() }

    private func out(_ text: String) throws {
        buffer.append(contentsOf: text.utf8)
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        try buffer.withUnsafeBytes { try StandardOutput.write($0) }
    }

    /// RFC 4180 quoting when needed.
    static func csv(_ field: String) -> String {
        // Scalars, not Characters: "\r\n" is one Character and equals neither "\r" nor "\n".
        guard
            field.unicodeScalars.contains(where: {
                $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r"
            })
        else {
            return field
        }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
