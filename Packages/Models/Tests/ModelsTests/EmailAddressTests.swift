import Foundation
import Testing

@testable import Models

/// `EmailAddress` checks ASCII text byte by byte (the server reads an address with every
/// customer row); these tests hold that path to the rules on characters it stands in for.
@Suite("e-mail addresses: the ASCII path and the character path agree")
struct EmailAddressTests {
    /// The outcome of one path: the value, the error's code and reason, or "not ASCII".
    static func outcome(_ check: () throws -> String?) -> String {
        do {
            guard let value = try check() else { return "not ASCII" }
            return "ok " + value
        } catch let error as ValidationError {
            return "error \(error.field) \(error.code) \(error.reason)"
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test("50,000 generated ASCII strings: the same value or the same error")
    func generated() throws {
        // Every character the rules single out, and plenty of ordinary ones.
        let alphabet = Array("aZ09.-_+@ \t\r\n\r<>()[]\\,;:\"\u{7F}\u{1}xY.@-.")
        var random = SplitMix64(state: 29)
        var accepted = 0
        for round in 0..<50_000 {
            let length = Int.random(in: 0...(round % 10 == 0 ? 300 : 24), using: &random)
            var text = String((0..<length).map { _ in alphabet.randomElement(using: &random)! })
            if round % 2 == 0 {
                // Near-valid shapes: local@label.label, mostly letters, with some noise.
                func part(_ count: Int) -> String {
                    String(
                        (0..<count).map { _ in
                            Int.random(in: 0..<10, using: &random) == 0
                                ? alphabet.randomElement(using: &random)!
                                : Character(
                                    Unicode.Scalar(UInt8.random(in: 0x61...0x7A, using: &random))
                                )
                        }
                    )
                }
                text =
                    part(Int.random(in: 0...8, using: &random)) + "@"
                    + part(Int.random(in: 0...6, using: &random)) + "."
                    + part(Int.random(in: 0...4, using: &random))
            }
            let ascii = Self.outcome { try EmailAddress.asciiValue(text) }
            let general = Self.outcome { try EmailAddress(checking: text).value }
            #expect(ascii == general, "\(text.debugDescription)")
            if general.hasPrefix("ok") { accepted += 1 }
        }
        // The generator reaches both outcomes often enough to mean something.
        #expect(accepted > 1_000)
    }

    @Test("text beyond ASCII takes the character path")
    func unicode() throws {
        #expect(try EmailAddress.asciiValue("Mixed.Case@bücher.de") == nil)
        #expect(try EmailAddress("Mixed.Case@BÜCHER.de").value == "Mixed.Case@bücher.de")
        #expect(try EmailAddress.asciiValue(" Ana@Example.COM\t") == "Ana@example.com")
    }
}
