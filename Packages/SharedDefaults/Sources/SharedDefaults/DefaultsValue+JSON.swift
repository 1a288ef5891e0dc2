public import Foundation

extension DefaultsValue {
    /// How ``jsonText(pretty:)`` lays values out.
    ///
    /// Keys are always sorted so the text is stable. Dates become RFC 3339 strings (with
    /// fractional seconds only when the date has them), data becomes base64, and a
    /// non-finite double (which JSON cannot hold) becomes `null`.
    public func jsonText(pretty: Bool = false) -> String {
        var out = ""
        JSONWriter(pretty: pretty).write(self, into: &out, indent: 0)
        return out
    }

    /// Parses JSON text into a value: objects become dictionaries, numbers without a
    /// fraction or exponent become integers (when they fit), other numbers doubles.
    ///
    /// `null` is rejected because the store has no null; use removal instead. Arrays and
    /// objects may nest `maximumNestingDepth` levels: a value to store takes the default,
    /// ``DefaultsLimits/maximumNestingDepth``; a whole suite (its top-level object holding
    /// the values) one more.
    /// - Throws: ``DefaultsValueParseError`` naming the offset and the problem (with
    ///   ``DefaultsValueParseError/limit`` set when the text is valid but too deep).
    public init(
        jsonText text: String,
        maximumNestingDepth: Int = DefaultsLimits.maximumNestingDepth
    ) throws(DefaultsValueParseError) {
        var parser = JSONParser(bytes: Array(text.utf8), maximumNesting: maximumNestingDepth)
        self = try parser.parseDocument()
    }

    /// Parses JSON bytes; see ``init(jsonText:maximumNestingDepth:)``.
    public init(
        jsonData data: Data,
        maximumNestingDepth: Int = DefaultsLimits.maximumNestingDepth
    ) throws(DefaultsValueParseError) {
        var parser = JSONParser(bytes: [UInt8](data), maximumNesting: maximumNestingDepth)
        self = try parser.parseDocument()
    }

    /// The RFC 3339 text of a date in UTC, with fractional seconds only when present.
    public static func rfc3339(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        let style = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)
        if whole == seconds {
            return date.formatted(style)
        }
        return date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: style.timeZone)
        )
    }

    /// Parses an ISO 8601 / RFC 3339 date (`2026-11-23T07:00:00Z`, with or without
    /// fractional seconds or a numeric offset, or a plain `2026-11-23` day in UTC).
    public static func parseDate(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let utc = TimeZone(identifier: "UTC")!
        let styles: [Date.ISO8601FormatStyle] = [
            Date.ISO8601FormatStyle(timeZone: utc),
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: utc),
            Date.ISO8601FormatStyle(timeZone: utc).year().month().day(),
        ]
        for style in styles {
            if let date = try? style.parse(trimmed) { return date }
        }
        return nil
    }
}

/// JSON or property-list text that could not be turned into a ``DefaultsValue``.
public struct DefaultsValueParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset in the input where the problem was found (0 when not known).
    public var offset: Int
    /// What is wrong, for people.
    public var message: String
    /// The limit the text passed, when it is well formed but past one of ``DefaultsLimits``
    /// (nil for a syntax error).
    public var limit: DefaultsLimitError.Limit?

    /// Creates an error at an offset.
    public init(offset: Int, message: String, limit: DefaultsLimitError.Limit? = nil) {
        self.offset = offset
        self.message = message
        self.limit = limit
    }

    /// `message (at byte N)`.
    public var description: String { "\(message) (at byte \(offset))" }
}

struct JSONWriter {
    var pretty: Bool

    func write(_ value: DefaultsValue, into out: inout String, indent: Int) {
        switch value {
        case .string(let string): Self.writeString(string, into: &out)
        case .int(let int): out += String(int)
        case .double(let double):
            if double.isFinite {
                // Swift prints the shortest text that reads back as the same double.
                out += "\(double)"
            } else {
                out += "null"
            }
        case .bool(let bool): out += bool ? "true" : "false"
        case .date(let date): Self.writeString(DefaultsValue.rfc3339(date), into: &out)
        case .data(let data): Self.writeString(data.base64EncodedString(), into: &out)
        case .array(let elements):
            if elements.isEmpty {
                out += "[]"
                return
            }
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                newline(into: &out, indent: indent + 1)
                write(element, into: &out, indent: indent + 1)
            }
            newline(into: &out, indent: indent)
            out += "]"
        case .dictionary(let entries):
            if entries.isEmpty {
                out += "{}"
                return
            }
            out += "{"
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                newline(into: &out, indent: indent + 1)
                Self.writeString(key, into: &out)
                out += pretty ? ": " : ":"
                write(entries[key]!, into: &out, indent: indent + 1)
            }
            newline(into: &out, indent: indent)
            out += "}"
        }
    }

    private func newline(into out: inout String, indent: Int) {
        guard pretty else { return }
        out += "\n"
        out += String(repeating: "  ", count: indent)
    }

    static func writeString(_ string: String, into out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    /// Arrays and objects the document may nest.
    let maximumNesting: Int

    init(bytes: [UInt8], maximumNesting: Int = DefaultsLimits.maximumNestingDepth) {
        self.bytes = bytes
        self.maximumNesting = maximumNesting
        // A UTF-8 byte-order mark is allowed at the start.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    mutating func parseDocument() throws(DefaultsValueParseError) -> DefaultsValue {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private func fail(_ message: String) -> DefaultsValueParseError {
        DefaultsValueParseError(offset: index, message: message)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// `depth`: the arrays and objects around this value.
    private mutating func parseValue(depth: Int) throws(DefaultsValueParseError) -> DefaultsValue {
        guard index < bytes.count else { throw fail("unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            throw fail("null has no stored form; leave the key out instead")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            throw fail("unexpected character '\(Character(Unicode.Scalar(bytes[index])))'")
        }
    }

    private mutating func expectLiteral(_ literal: String) throws(DefaultsValueParseError) {
        let expected = Array(literal.utf8)
        guard bytes.count - index >= expected.count,
            Array(bytes[index..<index + expected.count]) == expected
        else { throw fail("invalid literal, expected \(literal)") }
        index += expected.count
    }

    private func checkNesting(_ depth: Int) throws(DefaultsValueParseError) {
        guard depth < maximumNesting else {
            throw DefaultsValueParseError(
                offset: index,
                message:
                    "JSON nests arrays and objects more than \(maximumNesting) levels deep (the limit of a suite's values is \(DefaultsLimits.maximumNestingDepth))",
                limit: .nestingDepth
            )
        }
    }

    private mutating func parseObject(depth: Int) throws(DefaultsValueParseError) -> DefaultsValue {
        try checkNesting(depth)
        index += 1
        var entries: [String: DefaultsValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .dictionary(entries)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail("expected a string key")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw fail("expected ':' after a key")
            }
            index += 1
            skipWhitespace()
            entries[key] = try parseValue(depth: depth + 1)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON in an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .dictionary(entries)
            }
            throw fail("expected ',' or '}' in an object")
        }
    }

    private mutating func parseArray(depth: Int) throws(DefaultsValueParseError) -> DefaultsValue {
        try checkNesting(depth)
        index += 1
        var elements: [DefaultsValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON in an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            throw fail("expected ',' or ']' in an array")
        }
    }

    private mutating func parseHex4() throws(DefaultsValueParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"):
                digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseString() throws(DefaultsValueParseError) -> String {
        index += 1
        var utf8: [UInt8] = []
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw fail("string is not valid UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try parseHex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate in \\u escape") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw fail("unpaired surrogate in \\u escape")
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw fail("unpaired surrogate in \\u escape")
                    }
                    guard let scalar = Unicode.Scalar(code) else {
                        throw fail("invalid \\u escape")
                    }
                    utf8.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: throw fail("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw fail("control character in a string") }
                utf8.append(byte)
            }
        }
    }

    private mutating func parseNumber() throws(DefaultsValueParseError) -> DefaultsValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
        else { throw fail("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
            {
                index += 1
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let digits = index
            while index < bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
            {
                index += 1
            }
            guard index > digits else { throw fail("invalid number: no digits after '.'") }
        }
        if index < bytes.count,
            bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")
        {
            isInteger = false
            index += 1
            if index < bytes.count,
                bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
            {
                index += 1
            }
            let digits = index
            while index < bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
            {
                index += 1
            }
            guard index > digits else { throw fail("invalid number: no digits in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let int = Int(text) { return .int(int) }
        guard let double = Double(text), double.isFinite else {
            throw DefaultsValueParseError(offset: start, message: "number out of range")
        }
        return .double(double)
    }
}
