import Foundation
import Models
import Testing

@Suite("Confirmation codes")
struct ConfirmationCodeTests {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    @Test("a generated code prints as XXXX-XXXX and parses back", arguments: 0..<64)
    func generatedRoundTrip(seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let code = ConfirmationCode.random(using: &rng)
        let printed = code.description
        #expect(printed.count == 9)
        #expect(Array(printed)[4] == "-")
        #expect(try ConfirmationCode(printed) == code)
        #expect(try ConfirmationCode(code.compact) == code)
    }

    @Test("the same seed gives the same code")
    func deterministic() {
        var a = SplitMix64(state: 42)
        var b = SplitMix64(state: 42)
        #expect(ConfirmationCode.random(using: &a) == ConfirmationCode.random(using: &b))
    }

    @Test(
        "typing variants read as the same code",
        arguments: [
            "FK6S-Y95A", "fk6s-y95a", "FK6SY95A", "fk6s y95a", " FK6S - Y95A ", "Fk6S-y95a",
        ]
    )
    func lenientParsing(text: String) throws {
        #expect(try ConfirmationCode(text).description == "FK6S-Y95A")
    }

    @Test("I and L read as 1, O as 0")
    func lookalikes() throws {
        // 41SJ-3EQ4 contains a 1; 5K0J-KCT1 contains a 0 and a 1.
        #expect(try ConfirmationCode("4ISJ-3EQ4").description == "41SJ-3EQ4")
        #expect(try ConfirmationCode("4lsj-3eq4").description == "41SJ-3EQ4")
        #expect(try ConfirmationCode("5KOJ-KCTL").description == "5K0J-KCT1")
        #expect(try ConfirmationCode("5koj-kcti").description == "5K0J-KCT1")
    }

    @Test(
        "bad codes are rejected with the right error code",
        arguments: [
            ("FK6S-Y95B", ValidationError.Code.invalidCheckDigit),
            ("FK6S-Y59A", .invalidCheckDigit),
            ("KF6S-Y95A", .invalidCheckDigit),
            ("FK6S-Y95", .invalidFormat),
            ("FK6S-Y95AA", .invalidFormat),
            ("", .invalidFormat),
            ("FK6S-Y9UA", .invalidFormat),
            ("FK6S_Y95A", .invalidFormat),
            ("FK6S*Y95A", .invalidFormat),
            ("FK6S-Y95Ä", .invalidFormat),
        ]
    )
    func rejects(text: String, code: ValidationError.Code) {
        #expect {
            try ConfirmationCode(text)
        } throws: { error in
            (error as? ValidationError)?.code == code
                && (error as? ValidationError)?.field == "confirmationCode"
        }
    }

    @Test("every single-symbol substitution is detected", arguments: 0..<40)
    func substitutions(seed: UInt64) throws {
        var rng = SplitMix64(state: 1000 + seed)
        let symbols = Array(ConfirmationCode.random(using: &rng).compact)
        for position in 0..<8 {
            for replacement in Self.alphabet where replacement != symbols[position] {
                var changed = symbols
                changed[position] = replacement
                #expect(throws: ValidationError.self, "\(String(symbols)) → \(String(changed))") {
                    try ConfirmationCode(String(changed))
                }
            }
        }
    }

    @Test("every transposition of two different symbols is detected", arguments: 0..<200)
    func transpositions(seed: UInt64) throws {
        var rng = SplitMix64(state: 5000 + seed)
        let symbols = Array(ConfirmationCode.random(using: &rng).compact)
        for i in 0..<8 {
            for j in (i + 1)..<8 where symbols[i] != symbols[j] {
                var changed = symbols
                changed.swapAt(i, j)
                #expect(throws: ValidationError.self, "\(String(symbols)) swap \(i),\(j)") {
                    try ConfirmationCode(String(changed))
                }
            }
        }
    }

    @Test("the check symbol catches every adjacent swap of every symbol pair at every position")
    func exhaustiveAdjacentPairs() throws {
        // The check is linear, so a swap is detected independently of the other symbols:
        // testing every (a, b, position) with zeros elsewhere covers all codes.
        for position in 0..<7 {
            for a in 0..<32 {
                for b in 0..<32 where a != b {
                    var values = [UInt8](repeating: 0, count: 8)
                    values[position] = UInt8(a)
                    values[position + 1] = UInt8(b)
                    let original = Self.checkSum(values)
                    values.swapAt(position, position + 1)
                    #expect(Self.checkSum(values) != original)
                }
            }
        }
        // And every single substitution at every position of every symbol value.
        for position in 0..<8 {
            for a in 0..<32 {
                for b in 0..<32 where a != b {
                    var x = [UInt8](repeating: 0, count: 8)
                    var y = x
                    x[position] = UInt8(a)
                    y[position] = UInt8(b)
                    #expect(Self.checkSum(x) != Self.checkSum(y))
                }
            }
        }
    }

    /// The syndrome of eight symbol values: zero exactly for valid codes.
    static func checkSum(_ values: [UInt8]) -> UInt8 {
        ConfirmationCode.checkSymbol(for: values[0..<7]) ^ values[7]
    }

    @Test("codes built from data symbols carry the documented check symbol")
    func fromDataSymbols() throws {
        let code = try ConfirmationCode(dataSymbols: [0, 0, 0, 0, 0, 0, 1])
        // 1·α = 2 → symbol "2".
        #expect(code.description == "0000-0012")
        let other = try ConfirmationCode(dataSymbols: [1, 0, 0, 0, 0, 0, 0])
        // α⁷ = x⁷ = x²·x⁵ = x²(x²+1) = x⁴+x² = 20 → "M".
        #expect(other.description == "1000-000M")
        #expect(throws: ValidationError.self) {
            try ConfirmationCode(dataSymbols: [32, 0, 0, 0, 0, 0, 0])
        }
        #expect(throws: ValidationError.self) { try ConfirmationCode(dataSymbols: [1, 2, 3]) }
    }

    @Test(
        "pass QR payloads hold the bare code or the shopfloor URL",
        arguments: [
            "FK6S-Y95A", "shopfloor://reservations/FK6S-Y95A", "SHOPFLOOR://Reservations/fk6sy95a",
            "shopfloor://reservations/FK6S-Y95A/", "  FK6SY95A\n",
        ]
    )
    func passPayloads(payload: String) throws {
        #expect(try ConfirmationCode(passPayload: payload).description == "FK6S-Y95A")
    }

    @Test(
        "other payloads are rejected",
        arguments: [
            "https://example.com/FK6S-Y95A", "shopfloor://reservations/",
            "shopfloor://orders/FK6S-Y95A",
            "shopfloor://reservations/FK6S-Y95B",
        ]
    )
    func badPayloads(payload: String) {
        #expect(throws: ValidationError.self) { try ConfirmationCode(passPayload: payload) }
    }

    @Test("the pass payload of a code reads back")
    func passPayloadRoundTrip() throws {
        let code = try ConfirmationCode("HCAK-JQ53")
        #expect(code.passPayload == "shopfloor://reservations/HCAK-JQ53")
        #expect(try ConfirmationCode(passPayload: code.passPayload) == code)
    }

    @Test("JSON holds the printed string")
    func json() throws {
        let code = try ConfirmationCode("nrfb fyhj")
        let data = try JSONEncoder.shopfloor.encode([code])
        #expect(String(decoding: data, as: UTF8.self) == #"["NRFB-FYHJ"]"#)
        #expect(try roundTrip(code) == code)
        let error = try decodeFailure([ConfirmationCode].self, #"["NRFB-FYHK"]"#)
        #expect(error.code == .invalidCheckDigit)
        #expect(error.field == "0")
    }
}
