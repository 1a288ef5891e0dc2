import Foundation
import Scanner

#if canImport(Glibc)
    import Glibc
#endif

/// Writes records to stdout in the chosen format, buffered, flushed per record when stdout
/// is a terminal or a pipe someone reads as it comes.
final class RecordWriter {
    let format: OutputFormat

    init(format: OutputFormat) {
        self.format = format
    }

    func begin() {
        if format == .csv { out("file,format,text\n") }
    }

    func write(_ record: ScanRecord) {
        switch format {
        case .text:
            for symbol in record.symbols { out("\(symbol.symbology.zbarLabel):\(symbol.text)\n") }
            out(TextOutput.text(record))
        case .csv:
            for symbol in record.symbols {
                out(
                    "\(Self.csv(record.file)),\(symbol.symbology.rawValue),\(Self.csv(symbol.text))\n"
                )
            }
            out(TextOutput.csv(record))
        case .jsonl:
            out(JSONLine.encode(record) + "\n")
        }
    }

    private var buffer: [UInt8] = []
    private let flushEachRecord = isatty(1) == 1

    func end() { flush() }

    private func out(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if flushEachRecord || buffer.count >= 1 << 16 { flush() }
    }

    /// Writes the buffer to fd 1, retrying short writes; a closed pipe ends the output quietly.
    private func flush() {
        var offset = 0
        while offset < buffer.count {
            let n = buffer[offset...].withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
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

/// The JSONL line, keys in a fixed order: `{"file", "symbols": [...], "error"}`; `error` is
/// always present (null when the input was read). Fields of the `--text` mode (`text`,
/// `lines`, `matches`) go between `symbols` and `error`.
enum JSONLine {
    static func encode(_ record: ScanRecord) -> String {
        var out = "{\"file\":" + string(record.file) + ",\"symbols\":["
        for (i, s) in record.symbols.enumerated() {
            if i > 0 { out += "," }
            out += "{\"format\":" + string(s.symbology.rawValue)
            out += ",\"text\":" + string(s.text)
            out += ",\"bytesBase64\":" + string(s.bytes.base64EncodedString())
            out +=
                ",\"points\":[" + s.points.map { "[\($0.x),\($0.y)]" }.joined(separator: ",") + "]"
            out += ",\"engine\":" + string(s.engine.rawValue)
            out += ",\"symbologyIdentifier\":" + string(s.symbologyIdentifier)
            out += ",\"gs1\":" + (s.isGS1 ? "true" : "false") + "}"
        }
        out += "]" + TextOutput.jsonFields(record)
        out += ",\"error\":" + (record.error.map { string($0.description) } ?? "null") + "}"
        return out
    }

    /// A JSON string literal (RFC 8259 escaping).
    static func string(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
