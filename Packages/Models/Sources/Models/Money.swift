public import Foundation

/// An ISO 4217 alphabetic currency code such as `EUR`, with its minor unit.
///
/// Only codes on the ISO 4217 list (current codes, funds and the X-codes) are accepted, so a
/// typo such as `EUE` is caught at the edge. JSON holds the three letters.
public struct CurrencyCode: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The three uppercase letters.
    public let code: String

    /// Validates `code`: exactly three uppercase ASCII letters on the ISO 4217 list.
    public init(_ code: String) throws(ValidationError) {
        guard code.utf8.count == 3,
            code.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
        else {
            throw ValidationError(
                field: "currency",
                code: .invalidFormat,
                reason: "\"\(code.prefix(20))\" is not three uppercase letters (ISO 4217, e.g. EUR)"
            )
        }
        guard Self.known.contains(code) else {
            throw ValidationError(
                field: "currency",
                code: .unknownValue,
                reason: "\"\(code)\" is not an ISO 4217 currency"
            )
        }
        self.code = code
    }

    /// Digits after the decimal point in this currency's minor unit (EUR 2, JPY 0, KWD 3,
    /// CLF 4), or nil for codes without one (gold `XAU`, special drawing rights `XDR`).
    public var minorUnits: Int? {
        if Self.noMinorUnit.contains(code) { return nil }
        if Self.zeroDigits.contains(code) { return 0 }
        if Self.threeDigits.contains(code) { return 3 }
        if Self.fourDigits.contains(code) { return 4 }
        return 2
    }

    /// The three letters.
    public var description: String { code }

    /// Euro.
    public static let eur = try! CurrencyCode("EUR")  // on the list below
    /// US dollar.
    public static let usd = try! CurrencyCode("USD")  // on the list below

    /// Decodes three letters and validates them.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        self = try container.validating { () throws(ValidationError) in try CurrencyCode(text) }
    }

    /// Encodes the three letters.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }

    static let known: Set<String> = Set(
        """
        AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN \
        BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP \
        ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IQD IRR \
        ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD \
        MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR \
        PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL \
        THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF \
        XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG ZWL
        """.split(separator: " ").map(String.init)
    )
    static let zeroDigits: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND",
        "VUV",
        "XAF", "XOF", "XPF",
    ]
    static let threeDigits: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]
    static let fourDigits: Set<String> = ["CLF", "UYW"]
    static let noMinorUnit: Set<String> = [
        "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX",
    ]
}

/// An amount of money in one currency, exact (`Decimal`, never binary floating point).
///
/// JSON: `{"amount": "12.34", "currency": "EUR"}`; the amount is a decimal **string** (digits,
/// an optional leading `-`, an optional `.` and fraction; no exponent, no grouping). An amount
/// may not have more fractional digits than its currency's minor unit (`"1.005"` EUR is
/// rejected); it is written with exactly that many (`"12.30"`, `"500"` for JPY).
public struct Money: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The amount, at most ``CurrencyCode/minorUnits`` fractional digits.
    public let amount: Decimal
    /// The currency.
    public let currency: CurrencyCode

    /// Money of `amount` in `currency`; throws if `amount` is finer than the minor unit.
    public init(amount: Decimal, currency: CurrencyCode) throws(ValidationError) {
        guard amount.isFinite else {
            throw ValidationError(
                field: "amount",
                code: .invalidFormat,
                reason: "is not a finite number"
            )
        }
        if let digits = currency.minorUnits, Self.fractionDigits(of: amount) > digits {
            throw ValidationError(
                field: "amount",
                code: .invalidFormat,
                reason: "\(amount) has more than \(digits) fractional digits for \(currency)"
            )
        }
        self.amount = amount
        self.currency = currency
    }

    /// Parses `amount` as a plain decimal string (see the type's documentation).
    public init(amount: String, currency: CurrencyCode) throws(ValidationError) {
        try self.init(amount: Self.parseAmount(amount), currency: currency)
    }

    /// Money from a count of minor units: `Money(minorUnits: 1234, currency: .eur)` is 12.34 EUR.
    /// Currencies without a minor unit count whole units.
    public init(minorUnits: Int64, currency: CurrencyCode) {
        let digits = currency.minorUnits ?? 0
        amount = Decimal(
            sign: minorUnits < 0 ? .minus : .plus,
            exponent: -digits,
            significand: Decimal(minorUnits.magnitude)
        )
        self.currency = currency
    }

    /// The amount as a whole number of minor units (cents), or nil when it does not fit Int64.
    public var minorUnits: Int64? {
        let digits = currency.minorUnits ?? 0
        var scaled = amount * pow(Decimal(10), digits)
        var rounded = Decimal()
        NSDecimalRound(&rounded, &scaled, 0, .plain)
        return Int64(exactly: NSDecimalNumber(decimal: rounded).int64Value).flatMap { value in
            Decimal(value) == rounded ? value : nil
        }
    }

    /// The amount written with exactly the currency's minor-unit digits: `12.30`.
    public var amountString: String {
        var text = amount.description
        guard let digits = currency.minorUnits, digits > 0 else { return text }
        let existing = Self.fractionDigits(of: amount)
        if existing == 0 { text += "." }
        text += String(repeating: "0", count: max(0, digits - existing))
        return text
    }

    /// `12.30 EUR`.
    public var description: String { "\(amountString) \(currency)" }

    /// The sum of two amounts in the same currency; nil when the currencies differ.
    public func adding(_ other: Money) -> Money? {
        guard other.currency == currency else { return nil }
        return Money(exact: amount + other.amount, currency: currency)
    }

    /// The amount times `count`, e.g. a line total.
    public func multiplied(by count: Int) -> Money {
        Money(exact: amount * Decimal(count), currency: currency)
    }

    private init(exact amount: Decimal, currency: CurrencyCode) {
        self.amount = amount
        self.currency = currency
    }

    private enum CodingKeys: String, CodingKey { case amount, currency }

    /// Decodes and validates `{"amount": "12.34", "currency": "EUR"}`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let currency = try c.decode(CurrencyCode.self, forKey: .currency)
        let text = try c.decode(String.self, forKey: .amount)
        self = try c.validating(.amount) { () throws(ValidationError) in
            try Money(amount: text, currency: currency)
        }
    }

    /// Encodes `{"amount": "12.34", "currency": "EUR"}`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(amountString, forKey: .amount)
        try c.encode(currency, forKey: .currency)
    }

    private static let posix = Locale(identifier: "en_US_POSIX")

    static func parseAmount(_ text: String) throws(ValidationError) -> Decimal {
        let bytes = Array(text.utf8)
        var i = bytes.first == UInt8(ascii: "-") ? 1 : 0
        let intStart = i
        while i < bytes.count, bytes[i] &- UInt8(ascii: "0") < 10 { i += 1 }
        var ok = i > intStart && bytes.count <= 40
        if ok, i < bytes.count {
            ok = bytes[i] == UInt8(ascii: ".")
            i += 1
            let fracStart = i
            while i < bytes.count, bytes[i] &- UInt8(ascii: "0") < 10 { i += 1 }
            ok = ok && i > fracStart && i == bytes.count
        }
        guard ok, let value = Decimal(string: text, locale: posix)
        else {
            throw ValidationError(
                field: "amount",
                code: .invalidFormat,
                reason: "\"\(text.prefix(40))\" is not a decimal amount like \"12.34\""
            )
        }
        return value
    }

    static func fractionDigits(of value: Decimal) -> Int {
        // Decimal may carry trailing zeros in its significand; normalise via its description.
        let text = value.description
        guard let dot = text.firstIndex(of: ".") else { return 0 }
        return text.distance(from: dot, to: text.endIndex) - 1
    }
}
