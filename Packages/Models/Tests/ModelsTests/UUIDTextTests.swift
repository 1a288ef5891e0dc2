import Foundation
import Models
import Testing

/// `UUID(parsing:)` stands in for Foundation's `UUID(uuidString:)` on hot paths. It accepts
/// exactly the canonical text, with the value Foundation reads from it; Foundation's `sscanf`
/// also takes a space or a hyphen inside a group ("DB-84E17-…" reads as DBF84E17 or worse),
/// which it refuses.
@Suite("UUID text: parsing agrees with Foundation")
struct UUIDTextTests {
    @Test("20,000 UUIDs in either case, and mutated copies of them")
    func agrees() {
        var random = SplitMix64(state: 36)
        let noise = Array("0123456789abcdefABCDEFgG-_ {}\u{0}")
        var accepted = 0
        for round in 0..<20_000 {
            let id = UUID()
            var text = round % 2 == 0 ? id.uuidString : id.uuidString.lowercased()
            switch round % 5 {
            case 1:
                var characters = Array(text)
                characters[Int.random(in: 0..<36, using: &random)] =
                    noise.randomElement(using: &random)!
                text = String(characters)
            case 2: text = String(text.dropLast(Int.random(in: 1...3, using: &random)))
            case 3: text += String(noise.randomElement(using: &random)!)
            default: break
            }
            let canonical =
                text.utf8.count == 36
                && text.utf8.enumerated().allSatisfy { index, byte in
                    [8, 13, 18, 23].contains(index)
                        ? byte == UInt8(ascii: "-")
                        : (Character(Unicode.Scalar(byte)).isHexDigit)
                }
            let parsed = UUID(parsing: text)
            #expect((parsed != nil) == canonical, "\(text.debugDescription)")
            if canonical {
                #expect(parsed == UUID(uuidString: text), "\(text.debugDescription)")
                accepted += 1
            }
            if UUID(uuidString: text) == nil { #expect(parsed == nil) }
        }
        #expect(accepted > 8_000)
        #expect(UUID(parsing: "") == nil)
        #expect(UUID(parsing: "5D0F1C2A-0004-4A00-8000-00000000000ü") == nil)
    }
}
