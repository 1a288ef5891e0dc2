import Foundation
import Models
import Testing

@Suite("Money and currencies")
struct MoneyTests {
    @Test(
        "amounts are written with the currency's minor-unit digits",
        arguments: [
            ("12.34", "EUR", "12.34"), ("12.3", "EUR", "12.30"), ("12", "EUR", "12.00"),
            ("0", "USD", "0.00"),
            ("-5.5", "EUR", "-5.50"), ("500", "JPY", "500"), ("1.234", "KWD", "1.234"),
            ("1.2", "KWD", "1.200"),
            ("1.5", "CLF", "1.5000"), ("1.23456", "XAU", "1.23456"),
            ("12345678901234567.89", "EUR", "12345678901234567.89"),
        ]
    )
    func formatting(amount: String, currency: String, written: String) throws {
        let money = try Money(amount: amount, currency: CurrencyCode(currency))
        #expect(money.amountString == written)
        #expect(try roundTrip(money) == money)
        let json = String(decoding: try JSONEncoder.shopfloor.encode(money), as: UTF8.self)
        #expect(json == #"{"amount":"\#(written)","currency":"\#(currency)"}"#)
    }

    @Test(
        "wrong currencies are rejected",
        arguments: [
            ("eur", ValidationError.Code.invalidFormat), ("EURO", .invalidFormat),
            ("EU", .invalidFormat),
            ("E1R", .invalidFormat), ("", .invalidFormat), ("ÉUR", .invalidFormat),
            ("EUE", .unknownValue),
            ("ABC", .unknownValue), ("DEM", .unknownValue),
        ]
    )
    func badCurrency(code: String, error: ValidationError.Code) {
        #expect {
            try CurrencyCode(code)
        } throws: { thrown in
            (thrown as? ValidationError)?.code == error
                && (thrown as? ValidationError)?.field == "currency"
        }
    }

    @Test(
        "bad amounts are rejected",
        arguments: [
            ("12.345", "EUR"), ("1.5", "JPY"), ("1e3", "EUR"), ("12,34", "EUR"), ("", "EUR"),
            ("12.", "EUR"),
            (".5", "EUR"), ("+1", "EUR"), ("1 000", "EUR"), ("NaN", "EUR"), ("--1", "EUR"),
            ("1.23456", "CLF"),
        ]
    )
    func badAmount(amount: String, currency: String) throws {
        let code = try CurrencyCode(currency)
        #expect {
            try Money(amount: amount, currency: code)
        } throws: { error in
            (error as? ValidationError)?.field == "amount"
        }
    }

    @Test(
        "minor units convert both ways",
        arguments: [
            (1234 as Int64, "EUR", "12.34"), (-5, "EUR", "-0.05"), (500, "JPY", "500"),
            (1, "BHD", "0.001"),
        ]
    )
    func minorUnits(units: Int64, currency: String, written: String) throws {
        let money = Money(minorUnits: units, currency: try CurrencyCode(currency))
        #expect(money.amountString == written)
        #expect(money.minorUnits == units)
    }

    @Test("arithmetic keeps the currency")
    func arithmetic() throws {
        let a = try Money(amount: "19.95", currency: .eur)
        let b = try Money(amount: "0.05", currency: .eur)
        #expect(a.adding(b)?.amountString == "20.00")
        #expect(a.adding(try Money(amount: "1", currency: .usd)) == nil)
        #expect(a.multiplied(by: 3).amountString == "59.85")
        #expect(a.description == "19.95 EUR")
    }

    @Test("decoding names the nested field")
    func decodingErrors() throws {
        let error = try decodeFailure(
            Money.self,
            #"{"amount": 12.34, "currency": "EUR"}"#.replacingOccurrences(
                of: "12.34",
                with: "\"12.345\""
            )
        )
        #expect(error.field == "amount")
        let currency = try decodeFailure(Money.self, #"{"amount": "1", "currency": "eur"}"#)
        #expect(currency.field == "currency")
        #expect(throws: DecodingError.self) {
            try JSONDecoder.shopfloor.decode(
                Money.self,
                from: Data(#"{"amount": 12.34, "currency": "EUR"}"#.utf8)
            )
        }
    }
}

@Suite("Customers, phone numbers and e-mail")
struct CustomerTests {
    @Test(
        "phone numbers normalise to E.164",
        arguments: [
            ("+49 30 1234567", nil as Int?, "+49301234567"),
            ("+49 (0)30 1234567", nil, "+49301234567"),
            ("0049 30 1234567", nil, "+49301234567"),
            ("030 1234567", 49, "+49301234567"),
            ("030/123 45 67", 49, "+49301234567"),
            ("(415) 555-0100", 1, "+14155550100"),
            ("415.555.0100", 1, "+14155550100"),
            ("1-415-555-0100", 1, "+14155550100"),
            ("+1 (415) 555-0100", 49, "+14155550100"),
            ("020 7946 0958", 44, "+442079460958"),
            ("06 12 34 56 78", 33, "+33612345678"),
            ("06 1234 5678", 39, "+390612345678"),
            ("+44 20 7946 0958", nil, "+442079460958"),
        ]
    )
    func phones(text: String, defaultCode: Int?, e164: String) throws {
        #expect(try PhoneNumber(text, defaultCallingCode: defaultCode).e164 == e164)
    }

    @Test(
        "bad phone numbers are rejected",
        arguments: [
            ("030 1234567", nil as Int?), ("415-555-0100 ext 12", 1), ("555-0100", 1),
            ("+1 415 555 010", nil),
            ("+49 30 1234 5678 9012 34", nil), ("+0 30 1234567", nil), ("12", 49), ("call me", 49),
            ("", 49),
            ("+49 30 12a4567", nil),
        ]
    )
    func badPhones(text: String, defaultCode: Int?) {
        #expect(throws: ValidationError.self) {
            try PhoneNumber(text, defaultCallingCode: defaultCode)
        }
    }

    @Test("region codes give calling codes")
    func regions() {
        #expect(PhoneNumber.callingCode(forRegion: "de") == 49)
        #expect(PhoneNumber.callingCode(forRegion: "US") == 1)
        #expect(PhoneNumber.callingCode(forRegion: "XX") == nil)
    }

    @Test(
        "e-mail addresses are checked and their domain lowercased",
        arguments: [
            ("jana.novak@Example.COM", "jana.novak@example.com"),
            ("a+tag@shop.example.co.uk", "a+tag@shop.example.co.uk"),
            (" x@y.de ", "x@y.de"), ("Mixed.Case@bücher.de", "Mixed.Case@bücher.de"),
        ]
    )
    func emails(text: String, normalised: String) throws {
        #expect(try EmailAddress(text).value == normalised)
    }

    @Test(
        "bad e-mail addresses are rejected",
        arguments: [
            "plain", "a@b", "a@@b.de", "a@b@c.de", "@b.de", "a@.de", "a@b..de", ".a@b.de",
            "a.@b.de", "a..b@c.de",
            "a b@c.de", "a@-b.de", "a@b-.de", "a@b_c.de",
            "\(String(repeating: "x", count: 65))@b.de",
            "a@\(String(repeating: "x", count: 250)).de", "<a>@b.de",
        ]
    )
    func badEmails(text: String) {
        #expect(throws: ValidationError.self) { try EmailAddress(text) }
    }

    static let created = date("2026-01-05T10:00:00Z")

    @Test(
        "customer rules name the field",
        arguments: [
            ("", "Lee", nil as String?, 1, "givenName", ValidationError.Code.empty),
            ("  ", "Lee", nil, 1, "givenName", .empty),
            ("Sam", String(repeating: "L", count: 201), nil, 1, "familyName", .tooLong),
            ("Sam\nX", "Lee", nil, 1, "givenName", .invalidFormat),
            ("Sam", "Lee", String(repeating: "n", count: 2001), 1, "note", .tooLong),
            ("Sam", "Lee", nil, 0, "version", .outOfRange),
        ]
    )
    func customerRules(
        given: String,
        family: String,
        note: String?,
        version: Int,
        field: String,
        code: ValidationError.Code
    ) {
        #expect {
            try Customer(
                version: version,
                givenName: given,
                familyName: family,
                note: note,
                createdAt: Self.created
            )
        } throws: { error in
            (error as? ValidationError)?.field == field && (error as? ValidationError)?.code == code
        }
    }

    @Test("limits are inclusive: 200-character names and 2000-character notes are fine")
    func limits() throws {
        let customer = try Customer(
            givenName: String(repeating: "é", count: 200),
            familyName: "Lee",
            note: String(repeating: "n", count: 2000),
            createdAt: Self.created
        )
        #expect(try roundTrip(customer) == customer)
    }

    @Test("updatedAt may not be before createdAt")
    func order() {
        #expect(
            throws: ValidationError(
                field: "updatedAt",
                code: .invalidOrder,
                reason: "is before createdAt"
            )
        ) {
            try Customer(
                givenName: "A",
                familyName: "B",
                createdAt: Self.created,
                updatedAt: Self.created.addingTimeInterval(-1)
            )
        }
    }

    @Test("a customer round-trips through JSON, optionals left out")
    func roundTripCustomer() throws {
        let full = try Customer(
            givenName: "Jana",
            familyName: "Novák",
            email: EmailAddress("jana@example.com"),
            phone: PhoneNumber("+49 30 1234567"),
            note: "VIP",
            createdAt: Self.created,
            updatedAt: date("2026-02-01T08:00:00.250Z")
        )
        #expect(try roundTrip(full) == full)
        let bare = try Customer(givenName: "Sam", familyName: "Lee", createdAt: Self.created)
        let json = String(decoding: try JSONEncoder.shopfloor.encode(bare), as: UTF8.self)
        #expect(!json.contains("email") && !json.contains("phone") && !json.contains("note"))
        #expect(json.contains(#""createdAt":"2026-01-05T10:00:00.000Z""#))
    }
}
