import Foundation

/// A Global Trade Item Number: GTIN-8, GTIN-12 (UPC-A), GTIN-13 (EAN-13) or GTIN-14.
///
/// - Accepts 8, 12, 13 or 14 digits and validates the GS1 mod-10 check digit (weights 3 and
///   1 alternating from the digit left of the check digit).
/// - Stores and encodes the 14-digit form (`gtin14`, JSON `"09506000134352"`).
/// - Displays the shortest form that holds the number: the 14 digits with leading zeros
///   dropped down to 13, 12 or 8 digits, whichever is the shortest of those four lengths that
///   loses only zeros. `00000096385074` displays as `96385074` (GTIN-8), `00614141000036` as
///   `614141000036` (GTIN-12), `04006381333931` as `4006381333931` (GTIN-13). This matches
///   GS1's rule that the prefix `000000` in a 14-digit field marks a GTIN-8.
public struct GTIN: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The four GTIN lengths.
    public enum Format: Int, Sendable, CaseIterable {
        /// 8 digits (EAN-8).
        case gtin8 = 8
        /// 12 digits (UPC-A).
        case gtin12 = 12
        /// 13 digits (EAN-13).
        case gtin13 = 13
        /// 14 digits (ITF-14, logistic units).
        case gtin14 = 14
    }

    /// The 14-digit form, zero-padded on the left.
    public let gtin14: String

    /// Validates `digits` (8, 12, 13 or 14 ASCII digits; surrounding whitespace ignored).
    public init(_ digits: String) throws(ValidationError) {
        let text = digits.trimmingCharacters(in: .whitespaces)
        let bytes = Array(text.utf8)
        guard [8, 12, 13, 14].contains(bytes.count),
            bytes.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 })
        else {
            throw ValidationError(
                field: "gtin",
                code: .invalidFormat,
                reason: "\"\(text.prefix(30))\" is not 8, 12, 13 or 14 digits"
            )
        }
        let values = bytes.map { Int($0 - UInt8(ascii: "0")) }
        let expected = Self.checkDigit(for: values.dropLast())
        guard expected == values.last! else {
            throw ValidationError(
                field: "gtin",
                code: .invalidCheckDigit,
                reason: "\(text) has check digit \(values.last!), expected \(expected)"
            )
        }
        gtin14 = String(repeating: "0", count: 14 - bytes.count) + text
    }

    /// The GS1 mod-10 check digit for the digits before it (any length).
    public static func checkDigit<C: BidirectionalCollection>(for digits: C) -> Int
    where C.Element == Int {
        var sum = 0
        for (index, digit) in digits.reversed().enumerated() {
            sum += digit * (index % 2 == 0 ? 3 : 1)
        }
        return (10 - sum % 10) % 10
    }

    /// The shortest display format that holds this number (see the type's documentation).
    public var format: Format {
        let zeros = gtin14.utf8.prefix(while: { $0 == UInt8(ascii: "0") }).count
        switch zeros {
        case 6...: return .gtin8
        case 2...: return .gtin12
        case 1: return .gtin13
        default: return .gtin14
        }
    }

    /// The display form: the 14 digits cut to ``format``'s length.
    public var description: String { String(gtin14.suffix(format.rawValue)) }

    /// The 13-digit form (EAN-13), or nil when the indicator digit is not 0.
    public var gtin13: String? { gtin14.first == "0" ? String(gtin14.dropFirst()) : nil }

    /// Orders by the 14-digit form.
    public static func < (lhs: GTIN, rhs: GTIN) -> Bool { lhs.gtin14 < rhs.gtin14 }

    /// Decodes any accepted length and validates it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        self = try container.validating { () throws(ValidationError) in try GTIN(text) }
    }

    /// Encodes the 14-digit form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(gtin14)
    }
}
