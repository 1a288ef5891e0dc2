public import Foundation

/// A calendar date from a GS1 date field such as (17) expiry, `YYMMDD`.
///
/// The century follows the GS1 General Specifications (section 7.12): take the difference
/// between `YY` and the last two digits of the reference year; 51…99 means the previous
/// century, −99…−50 the next one, anything else the reference year's century. `DD = 00` means
/// the last day of the month (``dayWasOmitted`` is then true and ``day`` is that last day).
public struct GS1Date: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The four-digit year.
    public let year: Int
    /// The month, 1–12.
    public let month: Int
    /// The day of the month, resolved to the month's last day when the field said `00`.
    public let day: Int
    /// True when the field gave `00` for the day.
    public let dayWasOmitted: Bool

    /// Reads `YYMMDD`, for AI `ai` (used in the error's field), with the century rule relative
    /// to `referenceYear`.
    public init(yymmdd text: String, referenceYear: Int, ai: String = "17") throws(ValidationError)
    {
        let bytes = Array(text.utf8)
        guard bytes.count == 6, bytes.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else {
            throw ValidationError(
                field: "(\(ai))",
                code: .invalidFormat,
                reason: "\"\(text)\" is not YYMMDD"
            )
        }
        let v = bytes.map { Int($0 - UInt8(ascii: "0")) }
        let yy = v[0] * 10 + v[1]
        let mm = v[2] * 10 + v[3]
        let dd = v[4] * 10 + v[5]
        let difference = yy - referenceYear % 100
        var century = referenceYear / 100 * 100
        if difference >= 51 { century -= 100 } else if difference <= -50 { century += 100 }
        let year = century + yy
        guard (1...12).contains(mm) else {
            throw ValidationError(
                field: "(\(ai))",
                code: .invalidDate,
                reason: "\"\(text)\" has month \(mm)"
            )
        }
        let last = RFC3339.daysInMonth(year: year, month: mm)
        guard dd <= last else {
            throw ValidationError(
                field: "(\(ai))",
                code: .invalidDate,
                reason: "\"\(text)\" names day \(dd) of a month with \(last) days"
            )
        }
        self.year = year
        month = mm
        day = dd == 0 ? last : dd
        dayWasOmitted = dd == 0
    }

    /// `2026-02-28`.
    public var description: String {
        "\(RFC3339.pad4(year))-\(RFC3339.pad2(month))-\(RFC3339.pad2(day))"
    }

    /// Orders by calendar date.
    public static func < (lhs: GS1Date, rhs: GS1Date) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// The instant the day ends in `timeZone` (the first instant of the following day), which
    /// is when an expiry date has passed.
    public func endOfDay(in timeZone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let start = calendar.date(from: DateComponents(year: year, month: month, day: day))!
        return calendar.date(byAdding: .day, value: 1, to: start)!
    }
}

/// GS1 application identifier data as printed under or encoded in a barcode: GTIN, batch,
/// expiry, serial and other AIs.
///
/// Three input forms are read (``init(_:referenceYear:)`` picks by the first characters):
/// - raw element strings as scanners return them, AIs run together and variable-length
///   fields ended by FNC1/GS (`0x1D`), optionally led by a symbology identifier `]C1`, `]d2`,
///   `]Q3`, `]e0` or `]J1` and by a leading GS;
/// - bracketed human-readable text, `(01)09506000134352(17)260228(10)ABC`;
/// - GS1 Digital Link URLs on any host, `https://id.gs1.org/01/09506000134352/10/ABC?17=260228`,
///   with percent-decoding, path prefixes before the primary key, and non-AI query parameters
///   (`linkType`) ignored.
///
/// Values are checked against a table of AIs (numeric or not, fixed or maximum length);
/// (01) must carry a valid GTIN and (17) a real date. AIs outside the table pass through
/// unchecked in the bracketed and Digital Link forms; in raw strings an unknown AI is an error,
/// since its length cannot be known.
public struct GS1ElementString: Sendable, Hashable, CustomStringConvertible {
    /// One AI and its value, in input order.
    public struct Element: Sendable, Hashable {
        /// The application identifier, 2–4 digits (`"01"`, `"3103"`).
        public let ai: String
        /// The value as it appeared (GTINs as given, before normalising).
        public let value: String
    }

    /// Every element, in input order.
    public let elements: [Element]
    /// (01) GTIN.
    public let gtin: GTIN?
    /// (10) batch or lot number.
    public let batch: String?
    /// (17) expiry date.
    public let expiry: GS1Date?
    /// (21) serial number.
    public let serial: String?

    /// The value of the first element with `ai`.
    public subscript(ai: String) -> String? { elements.first { $0.ai == ai }?.value }

    /// The bracketed human-readable form, `(01)09506000134352(10)ABC`.
    public var description: String { elements.map { "(\($0.ai))\($0.value)" }.joined() }

    /// The raw element string with GS (`0x1D`) after each variable-length value that is not last.
    public var rawValue: String {
        var out = ""
        for (index, element) in elements.enumerated() {
            out += element.ai + element.value
            if index < elements.count - 1, Self.predefinedLength(element.ai) == nil {
                out += "\u{1D}"
            }
        }
        return out
    }

    /// Parses any of the three forms; `referenceYear` (default: this year, UTC) anchors the
    /// century of two-digit years.
    public init(_ text: String, referenceYear: Int? = nil) throws(ValidationError) {
        let year =
            referenceYear
            ?? RFC3339.civil(
                fromDays: Int64((Date().timeIntervalSince1970 / 86_400).rounded(.down))
            ).0
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let lower = trimmed.prefix(8).lowercased()
        let pairs: [(String, String)]
        if lower.hasPrefix("https://") || lower.hasPrefix("http://") {
            pairs = try Self.digitalLinkPairs(trimmed)
        } else if trimmed.hasPrefix("(") {
            pairs = try Self.bracketedPairs(trimmed)
        } else {
            pairs = try Self.rawPairs(trimmed)
        }
        guard !pairs.isEmpty else {
            throw ValidationError(
                field: "gs1",
                code: .empty,
                reason: "holds no application identifiers"
            )
        }
        var elements: [Element] = []
        var gtin: GTIN?
        var batch: String?
        var expiry: GS1Date?
        var serial: String?
        for (ai, value) in pairs {
            try Self.check(ai: ai, value: value)
            if elements.contains(where: { $0.ai == ai }) {
                throw ValidationError(field: "(\(ai))", code: .duplicate, reason: "appears twice")
            }
            switch ai {
            case "01":
                do { gtin = try GTIN(value) } catch {
                    throw ValidationError(field: "(01)", code: error.code, reason: error.reason)
                }
            case "10": batch = value
            case "17": expiry = try GS1Date(yymmdd: value, referenceYear: year, ai: ai)
            case "11", "12", "13", "15", "16":
                _ = try GS1Date(yymmdd: value, referenceYear: year, ai: ai)
            case "21": serial = value
            default: break
            }
            elements.append(Element(ai: ai, value: value))
        }
        self.elements = elements
        self.gtin = gtin
        self.batch = batch
        self.expiry = expiry
        self.serial = serial
    }

    // MARK: - Forms

    private static let gs: UInt8 = 0x1D

    static func rawPairs(_ text: String) throws(ValidationError) -> [(String, String)] {
        var bytes = Array(text.utf8)[...]
        if bytes.first == UInt8(ascii: "]") {
            guard bytes.count >= 3 else {
                throw ValidationError(
                    field: "gs1",
                    code: .invalidFormat,
                    reason: "has a cut-off symbology identifier"
                )
            }
            bytes = bytes.dropFirst(3)
        }
        while bytes.first == gs { bytes = bytes.dropFirst() }
        var pairs: [(String, String)] = []
        while !bytes.isEmpty {
            guard bytes.count >= 2, let aiLength = aiLength(bytes.prefix(2)),
                bytes.count >= aiLength,
                bytes.prefix(aiLength).allSatisfy({ $0 &- UInt8(ascii: "0") < 10 })
            else {
                throw ValidationError(
                    field: "gs1",
                    code: .invalidFormat,
                    reason:
                        "has no known application identifier at \"\(String(decoding: bytes.prefix(6), as: UTF8.self))\""
                )
            }
            let ai = String(decoding: bytes.prefix(aiLength), as: UTF8.self)
            bytes = bytes.dropFirst(aiLength)
            let value: ArraySlice<UInt8>
            if let fixed = predefinedLength(ai) {
                guard bytes.count >= fixed else {
                    throw ValidationError(
                        field: "(\(ai))",
                        code: .invalidFormat,
                        reason: "needs \(fixed) characters, has \(bytes.count)"
                    )
                }
                value = bytes.prefix(fixed)
                bytes = bytes.dropFirst(fixed)
            } else {
                let end = bytes.firstIndex(of: gs) ?? bytes.endIndex
                value = bytes[bytes.startIndex..<end]
                bytes = bytes[end...]
            }
            while bytes.first == gs { bytes = bytes.dropFirst() }
            pairs.append((ai, String(decoding: value, as: UTF8.self)))
        }
        return pairs
    }

    static func bracketedPairs(_ text: String) throws(ValidationError) -> [(String, String)] {
        var pairs: [(String, String)] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            guard rest.first == "(", let close = rest.firstIndex(of: ")") else {
                throw ValidationError(
                    field: "gs1",
                    code: .invalidFormat,
                    reason: "expected \"(AI)\" at \"\(rest.prefix(10))\""
                )
            }
            let ai = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
            let end = rest.firstIndex(of: "(") ?? rest.endIndex
            pairs.append((ai, String(rest[..<end])))
            rest = rest[end...]
        }
        return pairs
    }

    static let shortNames = ["gtin": "01", "lot": "10", "ser": "21", "cpv": "22"]
    static let primaryKeys: Set<String> = [
        "01", "00", "253", "255", "401", "402", "414", "417", "8003", "8004", "8006", "8010",
        "8013", "8017", "8018",
    ]

    static func digitalLinkPairs(_ text: String) throws(ValidationError) -> [(String, String)] {
        guard let components = URLComponents(string: text) else {
            throw ValidationError(field: "gs1", code: .invalidFormat, reason: "is not a valid URL")
        }
        func decode(_ part: Substring) throws(ValidationError) -> String {
            guard let decoded = String(part).removingPercentEncoding else {
                throw ValidationError(
                    field: "gs1",
                    code: .invalidFormat,
                    reason: "has broken percent-encoding in \"\(part)\""
                )
            }
            return decoded
        }
        var segments = components.percentEncodedPath.split(
            separator: "/",
            omittingEmptySubsequences: true
        )
        guard
            let start = segments.firstIndex(where: {
                primaryKeys.contains(shortNames[String($0)] ?? String($0))
            })
        else {
            throw ValidationError(
                field: "gs1",
                code: .invalidFormat,
                reason: "Digital Link URL has no primary key such as /01/"
            )
        }
        segments = Array(segments[start...])
        guard segments.count % 2 == 0 else {
            throw ValidationError(
                field: "gs1",
                code: .invalidFormat,
                reason: "Digital Link path has an AI without a value"
            )
        }
        var pairs: [(String, String)] = []
        for index in stride(from: 0, to: segments.count, by: 2) {
            let key = try decode(segments[index])
            pairs.append((shortNames[key] ?? key, try decode(segments[index + 1])))
        }
        for item in (components.percentEncodedQuery ?? "").split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = try decode(parts[0])
            guard (2...4).contains(key.utf8.count),
                key.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 })
            else { continue }
            pairs.append((key, parts.count > 1 ? try decode(parts[1]) : ""))
        }
        return pairs
    }

    // MARK: - AI table

    /// Digits in an AI, from its first two digits (GS1 General Specifications, 3.2).
    static func aiLength(_ prefix: ArraySlice<UInt8>) -> Int? {
        let p = String(decoding: prefix, as: UTF8.self)
        switch p {
        case "00", "01", "02", "03", "04", "10", "11", "12", "13", "15", "16", "17", "20", "21",
            "22", "30", "37",
            "90", "91", "92", "93", "94", "95", "96", "97", "98", "99":
            return 2
        case "23", "24", "25", "40", "41", "42": return 3
        case "31", "32", "33", "34", "35", "36", "39", "43", "70", "71", "72", "80", "81", "82":
            return 4
        default: return nil
        }
    }

    /// Data length of AIs whose length is predefined by their first two digits, which therefore
    /// need no GS after them in raw strings.
    static func predefinedLength(_ ai: String) -> Int? {
        switch ai.prefix(2) {
        case "00": return 18
        case "01", "02", "03": return 14
        case "04": return 16
        case "11", "12", "13", "14", "15", "16", "17", "18", "19": return 6
        case "20": return 2
        case "31", "32", "33", "34", "35", "36": return 6
        case "41": return 13
        default: return nil
        }
    }

    struct Rule {
        let numeric: Bool
        let length: ClosedRange<Int>
    }

    static func rule(for ai: String) -> Rule? {
        if let fixed = predefinedLength(ai),
            aiLength(Array(ai.utf8).prefix(2)[...]) == ai.utf8.count
        {
            return Rule(numeric: true, length: fixed...fixed)
        }
        switch ai {
        case "10", "21", "22", "243", "254", "420", "8002", "8012":
            return Rule(numeric: false, length: 1...20)
        case "30", "37": return Rule(numeric: true, length: 1...8)
        case "90", "240", "241", "250", "251", "400", "401", "403", "7002", "8004", "8010":
            return Rule(numeric: false, length: 1...30)
        case "91", "92", "93", "94", "95", "96", "97", "98", "99":
            return Rule(numeric: false, length: 1...90)
        case "235": return Rule(numeric: false, length: 1...28)
        case "242": return Rule(numeric: true, length: 1...6)
        case "253": return Rule(numeric: false, length: 13...30)
        case "255": return Rule(numeric: true, length: 13...25)
        case "402": return Rule(numeric: true, length: 17...17)
        case "421": return Rule(numeric: false, length: 4...12)
        case "422", "424", "426": return Rule(numeric: true, length: 3...3)
        case "423", "425": return Rule(numeric: true, length: 3...15)
        case "427": return Rule(numeric: false, length: 1...3)
        case "7001": return Rule(numeric: true, length: 13...13)
        case "7003": return Rule(numeric: true, length: 10...10)
        case "7006": return Rule(numeric: true, length: 6...6)
        case "8001": return Rule(numeric: true, length: 14...14)
        case "8003": return Rule(numeric: false, length: 14...30)
        case "8005": return Rule(numeric: true, length: 6...6)
        case "8006", "8017", "8018": return Rule(numeric: true, length: 18...18)
        case "8007": return Rule(numeric: false, length: 1...34)
        case "8008": return Rule(numeric: true, length: 8...12)
        case "8009": return Rule(numeric: false, length: 1...50)
        case "8013", "8020": return Rule(numeric: false, length: 1...25)
        case "8200": return Rule(numeric: false, length: 1...70)
        default:
            if ai.count == 4, ["390", "392"].contains(ai.prefix(3)) {
                return Rule(numeric: true, length: 1...15)
            }
            if ai.count == 4, ["391", "393"].contains(ai.prefix(3)) {
                return Rule(numeric: true, length: 4...18)
            }
            return nil
        }
    }

    static func check(ai: String, value: String) throws(ValidationError) {
        guard (2...4).contains(ai.utf8.count), ai.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 })
        else {
            throw ValidationError(
                field: "gs1",
                code: .invalidFormat,
                reason: "\"\(ai.prefix(10))\" is not an application identifier"
            )
        }
        let field = "(\(ai))"
        guard !value.isEmpty else {
            throw ValidationError(field: field, code: .empty, reason: "has no value")
        }
        // GS1's encodable set is printable ASCII; anything else (or a stray GS) is an error.
        guard value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw ValidationError(
                field: field,
                code: .invalidFormat,
                reason: "has a character outside GS1's set"
            )
        }
        guard let rule = rule(for: ai) else {
            guard value.utf8.count <= 90 else {
                throw ValidationError(
                    field: field,
                    code: .tooLong,
                    reason: "is longer than 90 characters"
                )
            }
            return
        }
        if rule.numeric, !value.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) {
            throw ValidationError(
                field: field,
                code: .invalidFormat,
                reason: "\"\(value.prefix(30))\" must be digits"
            )
        }
        if ai == "01" { return }  // GTIN accepts 8/12/13/14 digits in Digital Link and brackets
        let count = value.utf8.count
        if count > rule.length.upperBound {
            throw ValidationError(
                field: field,
                code: .tooLong,
                reason: "has \(count) characters, at most \(rule.length.upperBound)"
            )
        }
        if count < rule.length.lowerBound {
            throw ValidationError(
                field: field,
                code: .invalidFormat,
                reason: "has \(count) characters, needs \(rule.length.lowerBound)"
            )
        }
    }
}
