public import Foundation

/// RFC 3339 instants as the suite writes and reads them, hand-parsed (no formatter objects).
///
/// - Encoding always writes UTC with exactly three fractional digits:
///   `2026-11-23T07:05:09.120Z`. The instant is rounded to the nearest millisecond, so strings
///   sort in time order. Instants outside the years 0000–9999, which RFC 3339 cannot write,
///   are clamped to that range.
/// - Decoding accepts `T` or `t` between date and time, any number of fractional digits
///   (none included), and `Z`, `z` or a `±HH:MM` offset. The date must exist (2026-02-30 is
///   rejected), hours 00–23, minutes 00–59, seconds 00–60 (a leap second `60` is read as the
///   first second of the next minute), offsets at most ±23:59.
public enum RFC3339 {
    /// The instant written in the suite's one encode form, e.g. `2026-11-23T07:05:09.120Z`.
    public static func string(from date: Date) -> String {
        // RFC 3339 has four-digit years: instants outside 0000–9999 (and NaN) are clamped to
        // that range rather than trapping on the integer conversion.
        let totalMillis = (date.timeIntervalSince1970 * 1000).rounded()
        let millisInt = totalMillis.isNaN ? 0 : Int64(min(max(totalMillis, minMillis), maxMillis))
        var days = millisInt / 86_400_000
        var msOfDay = millisInt % 86_400_000
        if msOfDay < 0 {
            msOfDay += 86_400_000
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        let ms = Int(msOfDay)
        let hour = ms / 3_600_000
        let minute = ms / 60_000 % 60
        let second = ms / 1000 % 60
        let milli = ms % 1000
        return String(unsafeUninitializedCapacity: 30) { buffer in
            var i = 0
            func put(_ value: Int, digits: Int) {
                var v = value
                var j = i + digits - 1
                while j >= i {
                    buffer[j] = UInt8(ascii: "0") &+ UInt8(v % 10)
                    v /= 10
                    j -= 1
                }
                i += digits
            }
            func put(_ ascii: Unicode.Scalar) {
                buffer[i] = UInt8(ascii: ascii)
                i += 1
            }
            put(year, digits: 4)
            put("-"); put(month, digits: 2); put("-"); put(day, digits: 2)
            put("T"); put(hour, digits: 2); put(":"); put(minute, digits: 2); put(":")
            put(second, digits: 2); put("."); put(milli, digits: 3); put("Z")
            return i
        }
    }

    private static let minMillis = Double(days(fromCivil: 0, 1, 1)) * 86_400_000
    private static let maxMillis = Double(days(fromCivil: 10_000, 1, 1)) * 86_400_000 - 1

    /// Reads an RFC 3339 date-time. Throws a ``ValidationError`` for `field` naming the problem.
    public static func date(from string: String, field: String = "date") throws(ValidationError)
        -> Date
    {
        var copy = string
        let result: Result<Date, ValidationError> = copy.withUTF8 { bytes in
            parse(bytes, field: field)
        }
        return try result.get()
    }

    private static func parse(_ b: UnsafeBufferPointer<UInt8>, field: String) -> Result<
        Date, ValidationError
    > {
        func bad(_ reason: String) -> Result<Date, ValidationError> {
            .failure(ValidationError(field: field, code: .invalidFormat, reason: reason))
        }
        let shape = "is not an RFC 3339 date-time (YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM))"
        guard b.count >= 20 else { return bad(shape) }
        func digits(_ at: Int, _ n: Int) -> Int? {
            var v = 0
            for k in at..<(at + n) {
                let c = b[k] &- UInt8(ascii: "0")
                guard c < 10 else { return nil }
                v = v * 10 + Int(c)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let month = digits(5, 2),
            b[7] == UInt8(ascii: "-"), let day = digits(8, 2),
            b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
            let hour = digits(11, 2), b[13] == UInt8(ascii: ":"), let minute = digits(14, 2),
            b[16] == UInt8(ascii: ":"), let second = digits(17, 2)
        else { return bad(shape) }
        var i = 19
        var fraction = 0.0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] &- UInt8(ascii: "0") < 10 {
                fraction += Double(b[i] &- UInt8(ascii: "0")) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return bad(shape) }
        }
        guard i < b.count else { return bad(shape) }
        var offsetSeconds = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard b.count - i == 6, let oh = digits(i + 1, 2), b[i + 3] == UInt8(ascii: ":"),
                let om = digits(i + 4, 2)
            else { return bad(shape) }
            guard oh <= 23, om <= 59 else { return bad("has an impossible UTC offset") }
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        default:
            return bad(shape)
        }
        guard i == b.count else { return bad(shape) }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month)
        else {
            return .failure(
                ValidationError(
                    field: field,
                    code: .invalidDate,
                    reason:
                        "names a day that does not exist (\(pad4(year))-\(pad2(month))-\(pad2(day)))"
                )
            )
        }
        guard hour <= 23, minute <= 59, second <= 60 else {
            return .failure(
                ValidationError(
                    field: field,
                    code: .invalidDate,
                    reason: "has an impossible time of day"
                )
            )
        }
        let days = Self.days(fromCivil: year, month, day)
        let whole =
            Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return .success(Date(timeIntervalSince1970: Double(whole) + fraction))
    }

    static func pad2(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
    static func pad4(_ v: Int) -> String {
        String(repeating: "0", count: max(0, 4 - String(v).count)) + String(v)
    }

    static func isLeap(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    /// Days in `month` (1–12) of the proleptic Gregorian `year`.
    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days (public domain algorithms).
    static func days(fromCivil y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int, Int, Int) {
        let z = Int(z0) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

extension KeyedDecodingContainer {
    func decodeInstant(_ key: Key) throws -> Date {
        let text = try decode(String.self, forKey: key)
        return try validating(key) { () throws(ValidationError) in
            try RFC3339.date(from: text, field: key.stringValue)
        }
    }

    func decodeInstantIfPresent(_ key: Key) throws -> Date? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        return try validating(key) { () throws(ValidationError) in
            try RFC3339.date(from: text, field: key.stringValue)
        }
    }
}

extension KeyedEncodingContainer {
    mutating func encodeInstant(_ date: Date, forKey key: Key) throws {
        try encode(RFC3339.string(from: date), forKey: key)
    }
}

/// The suite's one JSON configuration, for every app and the server.
///
/// Keys are sorted (stable output for diffs, caches and signatures), slashes are not escaped,
/// and `Date` values outside the models (which write their own instants) use the same RFC 3339
/// form. Unknown keys are ignored on decode, as Swift's `Decodable` does.
public enum ModelsJSON {
    /// A new encoder with the suite's settings. Encoders are not shared between threads, so
    /// each caller takes its own.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        return encoder
    }

    /// A new decoder with the suite's settings (RFC 3339 dates, fractional seconds optional).
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            return try container.validating { () throws(ValidationError) in
                try RFC3339.date(from: text)
            }
        }
        return decoder
    }
}

extension JSONEncoder {
    /// A new encoder with the suite's settings; see ``ModelsJSON``.
    public static var shopfloor: JSONEncoder { ModelsJSON.makeEncoder() }
}

extension JSONDecoder {
    /// A new decoder with the suite's settings; see ``ModelsJSON``.
    public static var shopfloor: JSONDecoder { ModelsJSON.makeDecoder() }
}
