/// A strict RFC 8941 (Structured Field Values) reader for the dictionary members the
/// verifier needs: the `sig1` inner list of `Signature-Input`, the `sig1` byte sequence of
/// `Signature`, the `sha-256` byte sequence of `Content-Digest`.
///
/// The whole header must be a valid RFC 8941 dictionary (keys, inner lists, strings with only
/// `\"` and `\\` escapes and printable ASCII, integers, decimals, tokens, byte sequences,
/// booleans, parameters, `,` between members, no trailing comma); anything else is refused.
/// When a key repeats, the last member wins (RFC 8941 §4.2.2). It reads the UTF-8 bytes in
/// place and allocates only the values it returns. swift-http-structured-headers builds the
/// whole tree instead and costs several times the rest of a verification (see
/// `AuthBenchmarks`); HardeningTests fuzzes this reader against that library.
enum StructuredFieldReader {
    /// The parameters of a signature's inner list, and its exact text (for the signature base).
    struct SignatureParams {
        var components: [String] = []
        var created: Int64?
        var keyID: String?
        var nonce: String?
        var alg: String?
        /// The member's value as sent: `("@method" …);created=…;…`.
        var text: String = ""
    }

    /// The `label` member of a `Signature-Input` dictionary: an inner list of strings.
    static func signatureParams(_ label: String, in header: String) -> SignatureParams? {
        member(label, in: header) { parser, range in
            var params = SignatureParams()
            guard parser.peek() == UInt8(ascii: "(") else { return nil }
            let listed = parser.innerList(
                item: { item, parser in
                    guard case .string(let text) = item else { return false }
                    params.components.append(parser.string(text))
                    return true
                },
                parameter: { key, value, parser in
                    switch (parser.text(key), value) {
                    case ("created", .integer(let number)): params.created = number
                    case ("keyid", .string(let text)): params.keyID = parser.string(text)
                    case ("nonce", .string(let text)): params.nonce = parser.string(text)
                    case ("alg", .string(let text)): params.alg = parser.string(text)
                    case ("created", _), ("keyid", _), ("nonce", _), ("alg", _): return false
                    default: break  // other parameters are covered by the signature as sent
                    }
                    return true
                }
            )
            guard listed else { return nil }
            params.text = parser.text(range)
            return params
        }
    }

    /// The base64 text of the `label` member of a dictionary when it is a byte sequence
    /// (`label=:…:`, parameters allowed).
    static func byteSequence(_ label: String, in header: String) -> String? {
        member(label, in: header) { parser, _ in
            guard case .bytes(let text)? = parser.bareItem(),
                parser.parameters({ _, _, _ in true })
            else { return nil }
            return parser.text(text)
        }
    }

    /// Validates `header` as a dictionary, then reads the last member named `label` with
    /// `read` (given the parser at the member's value and the value's byte range).
    private static func member<T>(
        _ label: String,
        in header: String,
        _ read: (inout Parser, Range<Int>) -> T?
    ) -> T? {
        var header = header
        var labelBytes = label
        return header.withUTF8 { bytes in
            labelBytes.withUTF8 { label in
                var parser = Parser(bytes: bytes)
                guard let found = parser.dictionary(findingLast: label) else { return nil }
                var reader = Parser(bytes: bytes, index: found.lowerBound)
                return read(&reader, found)
            }
        }
    }

    /// A bare item, by the byte range of its text where it has one.
    enum BareItem {
        case integer(Int64)
        case decimal
        /// The range inside the quotes (escapes still in).
        case string(Range<Int>)
        case token(Range<Int>)
        /// The base64 text between the colons.
        case bytes(Range<Int>)
        case boolean(Bool)
    }

    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>, index: Int = 0) {
            self.bytes = bytes
            self.index = index
        }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        func text(_ range: Range<Int>) -> String {
            String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }

        /// A string item's value with its escapes resolved.
        func string(_ range: Range<Int>) -> String {
            let slice = UnsafeBufferPointer(rebasing: bytes[range])
            guard slice.contains(UInt8(ascii: "\\")) else {
                return String(decoding: slice, as: UTF8.self)
            }
            var out: [UInt8] = []
            var escaped = false
            for byte in slice {
                if !escaped, byte == UInt8(ascii: "\\") {
                    escaped = true
                    continue
                }
                escaped = false
                out.append(byte)
            }
            return String(decoding: out, as: UTF8.self)
        }

        mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == 0x20 { index += 1 }
        }

        mutating func skipOWS() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        }

        /// RFC 8941 §4.2.2 over the whole header; returns the value range of the last member
        /// whose key is `label`, `nil` when the header is invalid or has no such member.
        mutating func dictionary(findingLast label: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
            skipSpaces()
            var found: Range<Int>?
            while index < bytes.count {
                guard let key = key() else { return nil }
                let start = index
                if peek() == UInt8(ascii: "=") {
                    index += 1
                    let valueStart = index
                    guard itemOrInnerList() else { return nil }
                    if Self.equal(bytes, key, label) { found = valueStart..<index }
                } else {
                    // A bare key is `true` with parameters: not a value Auth reads.
                    guard parameters({ _, _, _ in true }) else { return nil }
                    if Self.equal(bytes, key, label) { found = start..<start }
                }
                skipOWS()
                guard index < bytes.count else { break }
                guard bytes[index] == UInt8(ascii: ",") else { return nil }
                index += 1
                skipOWS()
                guard index < bytes.count else { return nil }  // trailing comma
            }
            guard let found, !found.isEmpty else { return nil }
            return found
        }

        mutating func itemOrInnerList() -> Bool {
            if peek() == UInt8(ascii: "(") {
                return innerList(item: { _, _ in true }, parameter: { _, _, _ in true })
            }
            guard bareItem() != nil else { return false }
            return parameters({ _, _, _ in true })
        }

        /// `( item item … )` with parameters on each item and on the list.
        mutating func innerList(
            item: (BareItem, Parser) -> Bool,
            parameter: (Range<Int>, BareItem, Parser) -> Bool
        ) -> Bool {
            guard peek() == UInt8(ascii: "(") else { return false }
            index += 1
            while true {
                skipSpaces()
                guard let next = peek() else { return false }
                if next == UInt8(ascii: ")") {
                    index += 1
                    return parameters(parameter)
                }
                guard let value = bareItem(), item(value, self),
                    parameters({ _, _, _ in true })
                else { return false }
                guard let after = peek(), after == 0x20 || after == UInt8(ascii: ")") else {
                    return false
                }
            }
        }

        /// `;key[=value]` repeated.
        mutating func parameters(_ visit: (Range<Int>, BareItem, Parser) -> Bool) -> Bool {
            while peek() == UInt8(ascii: ";") {
                index += 1
                skipSpaces()
                guard let key = key() else { return false }
                var value = BareItem.boolean(true)
                if peek() == UInt8(ascii: "=") {
                    index += 1
                    guard let parsed = bareItem() else { return false }
                    value = parsed
                }
                guard visit(key, value, self) else { return false }
            }
            return true
        }

        /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`
        mutating func key() -> Range<Int>? {
            let start = index
            guard let first = peek(), Self.isLowerAlpha(first) || first == UInt8(ascii: "*") else {
                return nil
            }
            index += 1
            while let byte = peek(),
                Self.isLowerAlpha(byte) || Self.isDigit(byte) || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "*")
            {
                index += 1
            }
            return start..<index
        }

        mutating func bareItem() -> BareItem? {
            guard let first = peek() else { return nil }
            switch first {
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            case UInt8(ascii: "\""): return quoted()
            case UInt8(ascii: ":"): return byteSequence()
            case UInt8(ascii: "?"):
                index += 1
                guard let value = peek(), value == UInt8(ascii: "0") || value == UInt8(ascii: "1")
                else { return nil }
                index += 1
                return .boolean(value == UInt8(ascii: "1"))
            default:
                guard Self.isAlpha(first) || first == UInt8(ascii: "*") else { return nil }
                let start = index
                index += 1
                while let byte = peek(), Self.isTokenChar(byte) { index += 1 }
                return .token(start..<index)
            }
        }

        /// sf-integer (at most 15 digits) or sf-decimal (12 + 3 digits).
        mutating func number() -> BareItem? {
            var negative = false
            if peek() == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            var value: Int64 = 0
            var digits = 0
            var fraction = -1
            while let byte = peek() {
                if Self.isDigit(byte) {
                    if fraction >= 0 { fraction += 1 } else { digits += 1 }
                    value = value &* 10 &+ Int64(byte - UInt8(ascii: "0"))
                } else if byte == UInt8(ascii: "."), fraction < 0, digits > 0, digits <= 12 {
                    fraction = 0
                } else {
                    break
                }
                index += 1
                if fraction < 0 ? digits > 15 : fraction > 3 { return nil }
            }
            guard digits > 0 else { return nil }
            if fraction >= 0 { return fraction > 0 ? .decimal : nil }
            return .integer(negative ? -value : value)
        }

        /// sf-string: printable ASCII, `\"` and `\\` the only escapes.
        mutating func quoted() -> BareItem? {
            index += 1
            let start = index
            while let byte = peek() {
                index += 1
                switch byte {
                case UInt8(ascii: "\\"):
                    guard let next = peek(),
                        next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\")
                    else { return nil }
                    index += 1
                case UInt8(ascii: "\""):
                    return .string(start..<(index - 1))
                case 0x20...0x7E:
                    continue
                default:
                    return nil
                }
            }
            return nil
        }

        /// sf-binary: `:` base64 `:` (the alphabet checked here, the decoding later).
        mutating func byteSequence() -> BareItem? {
            index += 1
            let start = index
            while let byte = peek() {
                index += 1
                if byte == UInt8(ascii: ":") { return .bytes(start..<(index - 1)) }
                guard
                    Self.isAlpha(byte) || Self.isDigit(byte) || byte == UInt8(ascii: "+")
                        || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
                else { return nil }
            }
            return nil
        }

        static func equal(
            _ bytes: UnsafeBufferPointer<UInt8>,
            _ range: Range<Int>,
            _ label: UnsafeBufferPointer<UInt8>
        ) -> Bool {
            guard range.count == label.count else { return false }
            for offset in 0..<label.count where bytes[range.lowerBound + offset] != label[offset] {
                return false
            }
            return true
        }

        static func isLowerAlpha(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
        }

        static func isAlpha(_ byte: UInt8) -> Bool {
            isLowerAlpha(byte) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
        }

        static func isDigit(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }

        /// tchar / ":" / "/" (RFC 8941 sf-token).
        static func isTokenChar(_ byte: UInt8) -> Bool {
            if isAlpha(byte) || isDigit(byte) { return true }
            switch byte {
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"),
                UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
                UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"), UInt8(ascii: ":"),
                UInt8(ascii: "/"):
                return true
            default:
                return false
            }
        }
    }
}
