import Foundation
import Models
import Testing

@Suite("RFC 3339 instants")
struct RFC3339Tests {
    @Test(
        "valid instants read to the right moment",
        arguments: [
            ("2026-11-23T07:05:09Z", 1_795_417_509.0),
            ("2026-11-23T07:05:09.120Z", 1_795_417_509.12),
            ("2026-11-23t07:05:09.1z", 1_795_417_509.1),
            ("2026-11-23T08:05:09+01:00", 1_795_417_509.0),
            ("2026-11-23T02:35:09-04:30", 1_795_417_509.0),
            ("2026-11-23T07:05:09.123456789Z", 1_795_417_509.123456789),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59.5Z", -0.5),
            ("2024-02-29T12:00:00Z", 1_709_208_000),
            ("2000-02-29T00:00:00Z", 951_782_400),
            ("2016-12-31T23:59:60Z", 1_483_228_800),
        ]
    )
    func valid(text: String, seconds: Double) throws {
        let date = try RFC3339.date(from: text)
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_01)
    }

    @Test(
        "impossible or malformed instants are rejected",
        arguments: [
            ("2026-02-30T10:00:00Z", ValidationError.Code.invalidDate),
            ("2026-02-29T10:00:00Z", .invalidDate),
            ("1900-02-29T10:00:00Z", .invalidDate),
            ("2026-04-31T10:00:00Z", .invalidDate),
            ("2026-13-01T10:00:00Z", .invalidDate),
            ("2026-00-10T10:00:00Z", .invalidDate),
            ("2026-01-00T10:00:00Z", .invalidDate),
            ("2026-01-01T24:00:00Z", .invalidDate),
            ("2026-01-01T10:60:00Z", .invalidDate),
            ("2026-01-01T10:00:61Z", .invalidDate),
            ("2026-01-01T10:00:00", .invalidFormat),
            ("2026-01-01 10:00:00Z", .invalidFormat),
            ("2026-01-01T10:00:00.Z", .invalidFormat),
            ("2026-01-01T10:00:00+0100", .invalidFormat),
            ("2026-01-01T10:00:00+24:00", .invalidFormat),
            ("2026-1-01T10:00:00Z", .invalidFormat),
            ("2026-01-01", .invalidFormat),
            ("", .invalidFormat),
            ("2026-01-01T10:00:00Zjunk", .invalidFormat),
        ]
    )
    func invalid(text: String, code: ValidationError.Code) {
        #expect {
            try RFC3339.date(from: text, field: "startsAt")
        } throws: { error in
            (error as? ValidationError)?.code == code
                && (error as? ValidationError)?.field == "startsAt"
        }
    }

    @Test(
        "the encode form is UTC with milliseconds",
        arguments: [
            (0.0, "1970-01-01T00:00:00.000Z"),
            (1_795_417_509.12, "2026-11-23T07:05:09.120Z"),
            (1_795_417_509.9996, "2026-11-23T07:05:10.000Z"),
            (-0.5, "1969-12-31T23:59:59.500Z"),
            (951_782_400, "2000-02-29T00:00:00.000Z"),
            (253_402_300_799, "9999-12-31T23:59:59.000Z"),
            (1e300, "9999-12-31T23:59:59.999Z"),
            (-1e300, "0000-01-01T00:00:00.000Z"),
            (.infinity, "9999-12-31T23:59:59.999Z"),
            (.nan, "1970-01-01T00:00:00.000Z"),
        ]
    )
    func encodeForm(seconds: Double, text: String) {
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: seconds)) == text)
    }

    @Test(
        "every day of four years round-trips through the encoder",
        arguments: [1999, 2000, 2024, 2100]
    )
    func roundTripDays(year: Int) throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var day = calendar.date(
            from: DateComponents(year: year, month: 1, day: 1, hour: 13, minute: 7, second: 9)
        )!
        for _ in 0..<366 {
            let text = RFC3339.string(from: day)
            #expect(try RFC3339.date(from: text) == day)
            let parts = calendar.dateComponents([.year, .month, .day], from: day)
            #expect(
                text.hasPrefix(
                    String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
                )
            )
            day = calendar.date(byAdding: .day, value: 1, to: day)!
        }
    }

    @Test("the shared encoder and decoder use RFC 3339 for plain Dates too")
    func plainDates() throws {
        struct Event: Codable, Equatable { var at: Date }
        let event = Event(at: Date(timeIntervalSince1970: 1_795_417_509.5))
        let data = try JSONEncoder.shopfloor.encode(event)
        #expect(String(decoding: data, as: UTF8.self) == #"{"at":"2026-11-23T07:05:09.500Z"}"#)
        #expect(try JSONDecoder.shopfloor.decode(Event.self, from: data) == event)
        let error = try decodeFailure(Event.self, #"{"at":"2026-02-30T00:00:00Z"}"#)
        #expect(error.code == .invalidDate)
        #expect(error.field == "at")
    }
}
