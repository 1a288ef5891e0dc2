import Foundation

/// A phone number in E.164 form: `+`, a country calling code and the national number, at most
/// 15 digits in all (`+49301234567`).
///
/// Parsing accepts the ways people write numbers: spaces, hyphens, dots, slashes and
/// parentheses are dropped; `+` or the international prefix `00` starts an international
/// number, and a German-style `(0)` after the country code is dropped
/// (`+49 (0)30 1234567`). A national number (no `+`/`00`) needs `defaultCallingCode`: one
/// leading trunk `0` is dropped (kept for Italy, +39), and for the North American plan (+1) a
/// leading trunk `1` is dropped and exactly 10 digits are required (`(415) 555-0100`).
/// Letters, extensions and numbers of fewer than 7 or more than 15 digits are rejected. JSON
/// holds the E.164 string.
public struct PhoneNumber: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The E.164 string, e.g. `+14155550100`.
    public let e164: String

    /// Parses `text`, taking national numbers to be in the country with `defaultCallingCode`
    /// (`49` for Germany, `1` for the US and Canada). Without it, only international numbers
    /// are accepted.
    public init(_ text: String, defaultCallingCode: Int? = nil) throws(ValidationError) {
        func bad(_ reason: String) -> ValidationError {
            ValidationError(
                field: "phone",
                code: .invalidFormat,
                reason: "\"\(text.prefix(40))\" \(reason)"
            )
        }
        var working = text.trimmingCharacters(in: .whitespaces)
        var international = false
        if working.hasPrefix("+") {
            international = true
            working.removeFirst()
            if let range = working.range(of: "(0)") { working.removeSubrange(range) }
        }
        var digits: [UInt8] = []
        for byte in working.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(byte)
            case UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "/"),
                UInt8(ascii: "("),
                UInt8(ascii: ")"), 0xA0:
                continue
            default:
                throw bad(
                    "is not a phone number (only digits, spaces, -, ., /, parentheses and a leading +)"
                )
            }
        }
        if !international, digits.starts(with: [UInt8(ascii: "0"), UInt8(ascii: "0")]) {
            international = true
            digits.removeFirst(2)
        }
        if !international {
            guard let code = defaultCallingCode, (1...999).contains(code) else {
                throw bad("has no country calling code (write it as +CC …)")
            }
            if code == 1 {
                if digits.count == 11, digits.first == UInt8(ascii: "1") { digits.removeFirst() }
                guard digits.count == 10 else {
                    throw bad("is not a 10-digit North American number")
                }
            } else if code != 39, digits.first == UInt8(ascii: "0") {
                digits.removeFirst()
            }
            digits = Array(String(code).utf8) + digits
        }
        guard let first = digits.first, first != UInt8(ascii: "0") else {
            throw bad("has a country code starting with 0")
        }
        guard (7...15).contains(digits.count) else {
            throw bad("has \(digits.count) digits; E.164 allows 7 to 15")
        }
        if first == UInt8(ascii: "1"), digits.count != 11 {
            throw bad("is not a 10-digit North American number")
        }
        e164 = "+" + String(decoding: digits, as: UTF8.self)
    }

    /// The E.164 string.
    public var description: String { e164 }

    /// Decodes and normalises an international number.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        self = try container.validating { () throws(ValidationError) in try PhoneNumber(text) }
    }

    /// Encodes the E.164 string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(e164)
    }

    /// Country calling codes for common ISO 3166 region codes, for a `defaultCallingCode`
    /// taken from a store's market (`"DE"` → 49). Nil for regions not listed.
    public static func callingCode(forRegion region: String) -> Int? {
        regionCodes[region.uppercased()]
    }

    static let regionCodes: [String: Int] = [
        "US": 1, "CA": 1, "PR": 1, "MX": 52, "BR": 55, "AR": 54, "CL": 56, "CO": 57, "PE": 51,
        "GB": 44, "IE": 353, "DE": 49, "AT": 43, "CH": 41, "FR": 33, "BE": 32, "NL": 31, "LU": 352,
        "IT": 39, "ES": 34, "PT": 351, "DK": 45, "SE": 46, "NO": 47, "FI": 358, "IS": 354, "PL": 48,
        "CZ": 420, "SK": 421, "HU": 36, "SI": 386, "HR": 385, "RO": 40, "BG": 359, "GR": 30,
        "EE": 372,
        "LV": 371, "LT": 370, "TR": 90, "IL": 972, "AE": 971, "SA": 966, "EG": 20, "ZA": 27,
        "NG": 234,
        "KE": 254, "IN": 91, "CN": 86, "HK": 852, "TW": 886, "JP": 81, "KR": 82, "SG": 65, "MY": 60,
        "TH": 66, "VN": 84, "ID": 62, "PH": 63, "AU": 61, "NZ": 64, "UA": 380,
    ]
}

/// An e-mail address, checked for a plausible shape (not deliverability).
///
/// Rules: one `@`; a local part of 1–64 characters without spaces, control characters or
/// `<>()[]\,;:"` and not starting, ending or doubling a dot; a domain of at least two labels,
/// each 1–63 letters, digits or hyphens (not at a label's ends; non-ASCII letters allowed), 254
/// characters in all. The domain is lowercased; the local part is kept as given.
public struct EmailAddress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The address, domain lowercased.
    public let value: String

    /// Validates and normalises `text` (surrounding whitespace trimmed).
    public init(_ text: String) throws(ValidationError) {
        // Most addresses are ASCII: checked byte by byte, with the same rules and errors.
        if let value = try Self.asciiValue(text) {
            self.init(normalised: value)
        } else {
            try self.init(checking: text)
        }
    }

    private init(normalised value: String) { self.value = value }

    /// The rules of ``init(_:)`` on characters (any text).
    init(checking text: String) throws(ValidationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        func bad(_ reason: String) -> ValidationError {
            ValidationError(
                field: "email",
                code: .invalidFormat,
                reason: "\"\(trimmed.prefix(60))\" \(reason)"
            )
        }
        guard trimmed.utf8.count <= 254 else {
            throw ValidationError(
                field: "email",
                code: .tooLong,
                reason: "is longer than 254 characters"
            )
        }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw bad("must contain exactly one @") }
        let local = parts[0]
        let domain = parts[1].lowercased()
        guard (1...64).contains(local.utf8.count) else {
            throw bad("has a local part of 1 to 64 characters")
        }
        let forbidden = Set("<>()[]\\,;:\" ")
        guard
            !local.contains(where: {
                forbidden.contains($0)
                    || $0.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
            }),
            !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..")
        else { throw bad("has a local part with forbidden characters or dots") }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2,
            labels.allSatisfy({ label in
                (1...63).contains(label.utf8.count) && !label.hasPrefix("-")
                    && !label.hasSuffix("-")
                    && label.allSatisfy { $0 == "-" || $0.isLetter || $0.isNumber }
            })
        else { throw bad("has no valid domain (name.tld)") }
        value = "\(local)@\(domain)"
    }

    /// ``init(_:)``'s rules on ASCII bytes: the normalised address, or nil when `text` is not
    /// ASCII (``init(checking:)`` then decides). Spaces and tabs are the ASCII whitespace
    /// trimmed; ASCII letters and digits are the letters and numbers a domain allows.
    static func asciiValue(_ text: String) throws(ValidationError) -> String? {
        var text = text
        return try text.withUTF8 { Self.asciiValue(bytes: $0) }?.get()
    }

    private static func asciiValue(bytes: UnsafeBufferPointer<UInt8>)
        -> Result<String, ValidationError>?
    {
        guard !bytes.contains(where: { $0 >= 0x80 }) else { return nil }
        return Result { () throws(ValidationError) -> String in
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
            var start = 0
            var end = bytes.count
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            let trimmed = UnsafeBufferPointer(rebasing: bytes[start..<end])
            func bad(_ reason: String) -> ValidationError {
                ValidationError(
                    field: "email",
                    code: .invalidFormat,
                    reason: "\"\(String(decoding: trimmed, as: UTF8.self).prefix(60))\" \(reason)"
                )
            }
            guard trimmed.count <= 254 else {
                throw ValidationError(
                    field: "email",
                    code: .tooLong,
                    reason: "is longer than 254 characters"
                )
            }
            guard let at = trimmed.firstIndex(of: UInt8(ascii: "@")),
                !trimmed[(at + 1)...].contains(UInt8(ascii: "@"))
            else { throw bad("must contain exactly one @") }
            let local = trimmed[..<at]
            guard (1...64).contains(local.count) else {
                throw bad("has a local part of 1 to 64 characters")
            }
            let forbidden = Array("<>()[]\\,;:\" ".utf8)
            let dot = UInt8(ascii: ".")
            guard
                !local.contains(where: { forbidden.contains($0) || $0 < 0x20 || $0 == 0x7F }),
                local.first != dot, local.last != dot,
                !zip(local, local.dropFirst()).contains(where: { $0 == dot && $1 == dot })
            else { throw bad("has a local part with forbidden characters or dots") }
            var domain = Array(trimmed[(at + 1)...])
            for index in domain.indices where (0x41...0x5A).contains(domain[index]) {
                domain[index] += 0x20
            }
            let labels = domain.split(separator: dot, omittingEmptySubsequences: false)
            let hyphen = UInt8(ascii: "-")
            guard labels.count >= 2,
                labels.allSatisfy({ label in
                    (1...63).contains(label.count) && label.first != hyphen
                        && label.last != hyphen
                        && label.allSatisfy {
                            $0 == hyphen || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0)
                        }
                })
            else { throw bad("has no valid domain (name.tld)") }
            return String(decoding: local, as: UTF8.self) + "@"
                + String(decoding: domain, as: UTF8.self)
        }
    }

    /// The address.
    public var description: String { value }

    /// Decodes and validates an address.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        self = try container.validating { () throws(ValidationError) in try EmailAddress(text) }
    }

    /// Encodes the address.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
