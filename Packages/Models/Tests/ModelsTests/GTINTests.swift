import Foundation
import Models
import Testing

@Suite("GTIN and GS1 element strings")
struct GTINTests {
    @Test(
        "valid GTINs normalise to 14 digits and display in their shortest form",
        arguments: [
            ("96385074", "00000096385074", "96385074", GTIN.Format.gtin8),
            ("036000291452", "00036000291452", "036000291452", .gtin12),
            ("614141000036", "00614141000036", "614141000036", .gtin12),
            ("4006381333931", "04006381333931", "4006381333931", .gtin13),
            ("09506000134352", "09506000134352", "9506000134352", .gtin13),
            ("10614141000033", "10614141000033", "10614141000033", .gtin14),
            ("00000096385074", "00000096385074", "96385074", .gtin8),
            (" 4006381333931 ", "04006381333931", "4006381333931", .gtin13),
        ]
    )
    func valid(input: String, gtin14: String, display: String, format: GTIN.Format) throws {
        let gtin = try GTIN(input)
        #expect(gtin.gtin14 == gtin14)
        #expect(gtin.description == display)
        #expect(gtin.format == format)
        #expect(try GTIN(gtin.description) == gtin)
    }

    @Test(
        "bad GTINs are rejected",
        arguments: [
            ("96385075", ValidationError.Code.invalidCheckDigit),
            ("036000291453", .invalidCheckDigit),
            ("4006381333932", .invalidCheckDigit),
            ("09506000134353", .invalidCheckDigit),
            ("4006381333391", .invalidCheckDigit),
            ("400638133393", .invalidCheckDigit),
            ("1234567", .invalidFormat),
            ("123456789", .invalidFormat),
            ("400638133393A", .invalidFormat),
            ("", .invalidFormat),
            ("040063813339310", .invalidFormat),
            ("4006-381333931", .invalidFormat),
        ]
    )
    func invalid(input: String, code: ValidationError.Code) {
        #expect {
            try GTIN(input)
        } throws: { error in
            (error as? ValidationError)?.code == code
                && (error as? ValidationError)?.field == "gtin"
        }
    }

    @Test("every wrong check digit of a GTIN-13 is caught", arguments: 0...9)
    func everyCheckDigit(digit: Int) {
        let text = "400638133393\(digit)"
        if digit == 1 {
            #expect(throws: Never.self) { try GTIN(text) }
        } else {
            #expect(throws: ValidationError.self) { try GTIN(text) }
        }
    }

    @Test("JSON holds 14 digits and accepts the shorter forms")
    func json() throws {
        let gtin = try GTIN("4006381333931")
        #expect(
            String(decoding: try JSONEncoder.shopfloor.encode([gtin]), as: UTF8.self)
                == #"["04006381333931"]"#
        )
        #expect(try roundTrip(gtin) == gtin)
        #expect(
            try JSONDecoder.shopfloor.decode([GTIN].self, from: Data(#"["96385074"]"#.utf8)) == [
                try GTIN("96385074")
            ]
        )
    }

    // MARK: GS1

    @Test(
        "the three forms give the same elements",
        arguments: [
            "]d2010950600013435217260228\u{1D}10ABC-123\u{1D}21SER42",
            "010950600013435217260228\u{1D}10ABC-123\u{1D}21SER42",
            "\u{1D}010950600013435217260228\u{1D}10ABC-123\u{1D}21SER42",
            "]C101095060001343521726022810ABC-123\u{1D}21SER42",
            "]Q3010950600013435217260228\u{1D}10ABC-123\u{1D}\u{1D}21SER42",
            "(01)09506000134352(17)260228(10)ABC-123(21)SER42",
            "https://id.gs1.org/01/09506000134352/10/ABC-123/21/SER42?17=260228",
            "https://shop.example.com/products/01/09506000134352/10/ABC%2D123/21/SER42?17=260228&linkType=gs1:pip",
            "HTTP://example.org/gtin/9506000134352/lot/ABC-123/ser/SER42?17=260228",
        ]
    )
    func forms(text: String) throws {
        let parsed = try GS1ElementString(text, referenceYear: 2026)
        #expect(parsed.gtin == (try GTIN("09506000134352")))
        #expect(parsed.batch == "ABC-123")
        #expect(parsed.serial == "SER42")
        #expect(parsed.expiry?.description == "2026-02-28")
        #expect(parsed["17"] == "260228")
        #expect(Set(parsed.elements.map(\.ai)) == ["01", "10", "17", "21"])
    }

    @Test("bracketed and raw output read back")
    func outputRoundTrip() throws {
        let parsed = try GS1ElementString(
            "(01)09506000134352(10)LOT7(17)261100(21)X1(3103)001250",
            referenceYear: 2026
        )
        #expect(parsed.description == "(01)09506000134352(10)LOT7(17)261100(21)X1(3103)001250")
        #expect(
            parsed.rawValue == "0109506000134352" + "10LOT7\u{1D}" + "17261100" + "21X1\u{1D}"
                + "3103001250"
        )
        #expect(try GS1ElementString(parsed.rawValue, referenceYear: 2026) == parsed)
        #expect(parsed["3103"] == "001250")
    }

    @Test(
        "day 00 means the last day of the month",
        arguments: [
            ("260200", "2026-02-28"), ("280200", "2028-02-29"), ("261100", "2026-11-30"),
            ("261200", "2026-12-31"),
        ]
    )
    func lastDay(yymmdd: String, expected: String) throws {
        let parsed = try GS1ElementString("(17)\(yymmdd)", referenceYear: 2026)
        #expect(parsed.expiry?.description == expected)
        #expect(parsed.expiry?.dayWasOmitted == true)
    }

    @Test(
        "the GS1 century rule picks the nearest century",
        arguments: [
            (2026, "760101", 2076),  // +50: this century
            (2026, "770101", 1977),  // +51: previous century
            (2026, "250101", 2025),
            (2080, "290101", 2129),  // −51 … −99: next century
            (2080, "300101", 2130),  // −50: next century
            (2080, "310101", 2031),  // −49: this century
            (2099, "000101", 2100),
        ]
    )
    func century(reference: Int, yymmdd: String, year: Int) throws {
        #expect(try GS1Date(yymmdd: yymmdd, referenceYear: reference).year == year)
    }

    @Test(
        "bad element strings name the AI",
        arguments: [
            ("(17)260230", "(17)", ValidationError.Code.invalidDate),
            ("(17)250229", "(17)", .invalidDate),
            ("(17)261301", "(17)", .invalidDate),
            ("(17)2602", "(17)", .invalidFormat),
            ("(01)09506000134353", "(01)", .invalidCheckDigit),
            ("0109506000134353", "(01)", .invalidCheckDigit),
            ("(01)0950600013435X", "(01)", .invalidFormat),
            ("(10)ABCDEFGHIJKLMNOPQRSTU", "(10)", .tooLong),
            ("(10)", "(10)", .empty),
            ("(10)AB\u{1D}C", "(10)", .invalidFormat),
            ("(21)A(21)B", "(21)", .duplicate),
            ("(11)260431", "(11)", .invalidDate),
            ("(01", "gs1", .invalidFormat),
            ("0109506000", "(01)", .invalidFormat),
            ("5509506000134352", "gs1", .invalidFormat),
            ("", "gs1", .empty),
            ("https://id.gs1.org/10/ABC", "gs1", .invalidFormat),
            ("https://id.gs1.org/01/09506000134352/10", "gs1", .invalidFormat),
            ("https://id.gs1.org/01/09506000134352?17=260230", "(17)", .invalidDate),
            ("(abc)1", "gs1", .invalidFormat),
        ]
    )
    func rejects(text: String, field: String, code: ValidationError.Code) {
        #expect {
            try GS1ElementString(text, referenceYear: 2026)
        } throws: { error in
            guard let error = error as? ValidationError else { return false }
            return error.field == field && error.code == code
        }
    }

    @Test("unknown AIs pass through in bracketed and Digital Link forms")
    func passThrough() throws {
        let bracketed = try GS1ElementString("(01)09506000134352(7240)ABC", referenceYear: 2026)
        #expect(bracketed["7240"] == "ABC")
        let link = try GS1ElementString(
            "https://example.com/01/09506000134352?3103=000189&99=A%2FB&linkType=all",
            referenceYear: 2026
        )
        #expect(link["3103"] == "000189")
        #expect(link["99"] == "A/B")
        #expect(link["linkType"] == nil)
        // A space is outside GS1's character set.
        #expect(throws: ValidationError.self) {
            try GS1ElementString("https://example.com/01/09506000134352?99=A%20B")
        }
    }

    @Test("Digital Link values are percent-decoded")
    func percentDecoding() throws {
        let parsed = try GS1ElementString(
            "https://id.gs1.org/01/09506000134352/10/AB%2F12/21/%41%42",
            referenceYear: 2026
        )
        #expect(parsed.batch == "AB/12")
        #expect(parsed.serial == "AB")
    }

    @Test("an expiry date ends at midnight in the store's time zone")
    func endOfDay() throws {
        let expiry = try GS1Date(yymmdd: "261130", referenceYear: 2026)
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        #expect(RFC3339.string(from: expiry.endOfDay(in: berlin)) == "2026-11-30T23:00:00.000Z")
    }
}
