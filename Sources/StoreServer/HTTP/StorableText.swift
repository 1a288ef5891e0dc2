internal import Foundation

/// Text the databases cannot store, found before any query: NUL (PostgreSQL's `TEXT` refuses
/// it, and SQLite's `LIKE` stops matching at it) anywhere, lone UTF-16 surrogates in JSON
/// (escapes that are no Unicode scalar), and, in query parameters, any control character.
enum StorableText {
    /// What is wrong with `text` as a value to store or search for, or nil when it is fine.
    /// - Parameter controls: also refuse the other C0 controls and DEL (single-line inputs).
    static func problem(in text: some StringProtocol, controls: Bool = false) -> String? {
        for scalar in text.unicodeScalars {
            if scalar.value == 0 { return "contains a NUL character (U+0000)" }
            if controls, scalar.value < 0x20 || scalar.value == 0x7F {
                return "contains a control character (U+\(hex(scalar.value)))"
            }
        }
        return nil
    }

    /// The dotted path of the first JSON string (key or value) the databases cannot store,
    /// and what is wrong with it; nil when every string is fine or the document is not JSON
    /// (the decoder reports that).
    static func unstorableField(inJSON bytes: [UInt8]) -> (field: String, problem: String)? {
        var scanner = JSONScanner(bytes: bytes)
        return scanner.scanDocument()
    }

    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// A JSON reader that only follows structure and checks strings, keeping the path it is at.
private struct JSONScanner {
    let bytes: [UInt8]
    var index = 0
    var path: [String] = []
    /// Deeper documents are left to the decoder.
    static let maximumDepth = 64

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// A string's flaw found, or the scan gave up (malformed, too deep).
    enum Stop: Error {
        case found(field: String, problem: String)
        case malformed
    }

    mutating func scanDocument() -> (field: String, problem: String)? {
        do {
            try value(depth: 0)
            return nil
        } catch .found(let field, let problem) {
            return (field, problem)
        } catch {
            return nil
        }
    }

    var field: String { path.joined(separator: ".") }

    mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func value(depth: Int) throws(Stop) {
        guard depth < Self.maximumDepth else { throw .malformed }
        skipSpace()
        guard index < bytes.count else { throw .malformed }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                skipSpace()
                let key = try string(keyOf: field)
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw .malformed
                }
                index += 1
                path.append(key)
                try value(depth: depth + 1)
                path.removeLast()
                skipSpace()
                guard index < bytes.count else { throw .malformed }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return
                } else {
                    throw .malformed
                }
            }
        case UInt8(ascii: "["):
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            var element = 0
            while true {
                path.append(String(element))
                try value(depth: depth + 1)
                path.removeLast()
                element += 1
                skipSpace()
                guard index < bytes.count else { throw .malformed }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return
                } else {
                    throw .malformed
                }
            }
        case UInt8(ascii: "\""):
            _ = try string(keyOf: nil)
        default:
            // Numbers, true, false, null: up to the next delimiter.
            while index < bytes.count,
                ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D]
                    .contains(bytes[index])
            {
                if bytes[index] == 0 { throw .found(field: field, problem: "contains a NUL byte") }
                index += 1
            }
        }
    }

    /// Reads a string and returns it (for keys); a flaw is reported at the current path, or
    /// at `keyOf` (the object's own path) for a key.
    mutating func string(keyOf object: String?) throws(Stop) -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw .malformed }
        index += 1
        let start = index
        var pendingHigh = false
        func flaw(_ problem: String) -> Stop {
            .found(field: object ?? field, problem: problem)
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                if pendingHigh { throw flaw("contains a lone UTF-16 surrogate") }
                let text = String(decoding: bytes[start..<index], as: UTF8.self)
                index += 1
                return text
            }
            if byte == 0 { throw flaw("contains a NUL character (U+0000)") }
            guard byte == UInt8(ascii: "\\") else {
                if pendingHigh { throw flaw("contains a lone UTF-16 surrogate") }
                index += 1
                continue
            }
            guard index + 1 < bytes.count else { throw .malformed }
            let escape = bytes[index + 1]
            guard escape == UInt8(ascii: "u") else {
                if pendingHigh { throw flaw("contains a lone UTF-16 surrogate") }
                index += 2
                continue
            }
            guard index + 6 <= bytes.count,
                let unit = UInt16(
                    String(decoding: bytes[index + 2..<index + 6], as: UTF8.self),
                    radix: 16
                )
            else { throw .malformed }
            index += 6
            switch unit {
            case 0:
                throw flaw("contains a NUL character (U+0000)")
            case 0xD800...0xDBFF:
                if pendingHigh { throw flaw("contains a lone UTF-16 surrogate") }
                pendingHigh = true
            case 0xDC00...0xDFFF:
                if !pendingHigh { throw flaw("contains a lone UTF-16 surrogate") }
                pendingHigh = false
            default:
                if pendingHigh { throw flaw("contains a lone UTF-16 surrogate") }
            }
        }
        throw .malformed
    }
}
