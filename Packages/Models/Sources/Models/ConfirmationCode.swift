import Foundation

/// A reservation's confirmation code: 8 symbols of Crockford Base32, printed `XXXX-XXXX`.
///
/// The alphabet is `0123456789ABCDEFGHJKMNPQRSTVWXYZ` (no I, L, O, U). The first 7 symbols
/// carry data (35 bits); the 8th is a check symbol from the same 32 symbols.
///
/// **Check symbol.** Read each symbol as its value 0–31, an element of the field GF(32) built
/// on the polynomial x⁵ + x² + 1 (addition is XOR, α = x = 2 is primitive). With data symbols
/// d₁…d₇, the check symbol is
///
///     c = d₁·α⁷ + d₂·α⁶ + d₃·α⁵ + d₄·α⁴ + d₅·α³ + d₆·α² + d₇·α¹
///
/// so that every valid code satisfies Σ dᵢ·α⁸⁻ⁱ = 0 over all eight symbols (c has weight α⁰).
/// All eight weights are distinct and non-zero, so the code detects every single-symbol
/// substitution (w·e ≠ 0 for e ≠ 0 in a field) and every transposition of two symbols,
/// adjacent or not ((wᵢ − wⱼ)(a − b) ≠ 0). A plain weighted sum modulo 32 cannot do both,
/// because 32 is not prime.
///
/// **Parsing** is case-blind; hyphens and spaces are ignored; `I` and `L` read as `1`, `O` as
/// `0`; `U` is rejected. JSON holds the printed form `XXXX-XXXX`.
public struct ConfirmationCode: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The 32 symbols in value order.
    public static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// The 8 symbol values (0–31) packed 5 bits each, first symbol in the highest bits.
    public let rawValue: UInt64

    /// The code whose seven data symbol values (0–31 each) are `data`, with its check symbol.
    public init(dataSymbols data: [UInt8]) throws(ValidationError) {
        guard data.count == 7, data.allSatisfy({ $0 < 32 }) else {
            throw ValidationError(
                field: "confirmationCode",
                code: .invalidFormat,
                reason: "needs 7 data symbol values 0–31"
            )
        }
        var raw: UInt64 = 0
        for value in data { raw = raw << 5 | UInt64(value) }
        raw = raw << 5 | UInt64(Self.checkSymbol(for: data))
        rawValue = raw
    }

    /// A random code drawn from `generator` (35 random bits plus the check symbol).
    public static func random<G: RandomNumberGenerator>(using generator: inout G)
        -> ConfirmationCode
    {
        let bits = generator.next() & (1 << 35 - 1)
        let data = (0..<7).map { UInt8(truncatingIfNeeded: bits >> (5 * (6 - $0)) & 31) }
        return try! ConfirmationCode(dataSymbols: data)  // 7 values below 32 by construction
    }

    /// A random code from the system's secure generator.
    public static func random() -> ConfirmationCode {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// Parses a code as a person or scanner might type it: `7K3M-9QXB`, `7k3m 9qxb`, `7K3M9QXB`.
    /// Throws when it does not have 8 symbols, uses a symbol outside the alphabet, or its check
    /// symbol does not match.
    public init(_ text: String) throws(ValidationError) {
        // One pass over the bytes into a packed UInt64; no intermediate arrays.
        var raw: UInt64 = 0
        var count = 0
        var check: UInt8 = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "-") || byte == UInt8(ascii: " ") { continue }
            guard let value = Self.value(of: byte) else {
                throw ValidationError(
                    field: "confirmationCode",
                    code: .invalidFormat,
                    reason: "\"\(text.prefix(40))\" has a character outside Crockford Base32"
                )
            }
            count += 1
            if count > 8 { break }
            raw = raw << 5 | UInt64(value)
            check = count < 8 ? Self.timesAlpha(check ^ value) : check ^ value
        }
        guard count == 8 else {
            throw ValidationError(
                field: "confirmationCode",
                code: .invalidFormat,
                reason: "\"\(text.prefix(40))\" does not have 8 symbols (XXXX-XXXX)"
            )
        }
        guard check == 0 else {
            throw ValidationError(
                field: "confirmationCode",
                code: .invalidCheckDigit,
                reason: "\"\(text.prefix(40))\" has a wrong check symbol (mistyped?)"
            )
        }
        rawValue = raw
    }

    /// Reads a reservation pass QR payload: the bare code, or `shopfloor://reservations/CODE`
    /// (scheme and host case-blind, one trailing slash allowed, surrounding whitespace ignored).
    public init(passPayload payload: String) throws(ValidationError) {
        var text = Substring(payload.trimmingCharacters(in: .whitespacesAndNewlines))
        let prefix = "shopfloor://reservations/"
        if text.count > prefix.count, text.prefix(prefix.count).lowercased() == prefix {
            text = text.dropFirst(prefix.count)
            if text.hasSuffix("/") { text = text.dropLast() }
        } else if text.contains(":") || text.contains("/") {
            throw ValidationError(
                field: "confirmationCode",
                code: .invalidFormat,
                reason: "pass payload is neither a code nor shopfloor://reservations/CODE"
            )
        }
        try self.init(String(text))
    }

    /// The 8 symbols without a hyphen, e.g. `7K3M9QXB`.
    public var compact: String { render(hyphen: false) }

    /// The printed form, `XXXX-XXXX`.
    public var description: String { render(hyphen: true) }

    private func render(hyphen: Bool) -> String {
        String(unsafeUninitializedCapacity: 9) { buffer in
            var out = 0
            for index in 0..<8 {
                if hyphen, index == 4 {
                    buffer[out] = UInt8(ascii: "-")
                    out += 1
                }
                buffer[out] = Self.alphabet[Int(rawValue >> (5 * (7 - index)) & 31)]
                out += 1
            }
            return out
        }
    }

    /// The payload for a reservation pass QR code: `shopfloor://reservations/XXXX-XXXX`.
    public var passPayload: String { "shopfloor://reservations/\(description)" }

    /// Orders codes by their symbols.
    public static func < (lhs: ConfirmationCode, rhs: ConfirmationCode) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// Decodes the printed (or any parseable) form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        self = try container.validating { () throws(ValidationError) in try ConfirmationCode(text) }
    }

    /// Encodes the printed form `XXXX-XXXX`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    // MARK: - Check symbol

    /// The check symbol value for seven data symbol values; see the type's documentation.
    public static func checkSymbol<C: Collection>(for data: C) -> UInt8 where C.Element == UInt8 {
        var sum: UInt8 = 0
        // Horner's rule: ((d₁)·α + d₂)·α … then one more ·α gives weights α⁷…α¹.
        for value in data { sum = timesAlpha(sum ^ value) }
        return sum
    }

    /// Multiplication by α = x in GF(32) with the reduction polynomial x⁵ + x² + 1.
    @inline(__always)
    static func timesAlpha(_ v: UInt8) -> UInt8 {
        let shifted = v << 1
        return shifted & 0x20 != 0 ? (shifted ^ 0x25) : shifted
    }

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, symbol) in alphabet.enumerated() {
            table[Int(symbol)] = UInt8(value)
            table[Int(symbol | 0x20)] = UInt8(value)  // lowercase letters; digits unaffected
        }
        for (symbol, value) in [("I", 1), ("L", 1), ("O", 0), ("i", 1), ("l", 1), ("o", 0)] {
            table[Int(UInt8(ascii: Unicode.Scalar(symbol)!))] = UInt8(value)
        }
        return table
    }()

    @inline(__always)
    static func value(of byte: UInt8) -> UInt8? {
        let v = decodeTable[Int(byte)]
        return v == 0xFF ? nil : v
    }
}
