import Foundation
import Models
import Testing

@Suite("Text that can drive a terminal")
struct TextSafetyTests {
    @Test(
        "Single-line input refuses every control and bidi character; notes keep newlines and tabs",
        arguments: [
            ("plain text, accents é and emoji 👩‍👩‍👧", true, true),
            ("new\nline", false, true), ("tab\tbed", false, true),
            ("escape \u{1B}]52;c;x\u{07}", false, false), ("C1 \u{9B}2J", false, false),
            ("DEL \u{7F}", false, false), ("bidi \u{202E}evil", false, false),
            ("isolate \u{2066}x\u{2069}", false, false), ("carriage\rreturn", false, false),
        ]
    )
    func validation(text: String, line: Bool, notes: Bool) {
        #expect((TextSafety.lineProblem(text) == nil) == line)
        #expect((TextSafety.notesProblem(text) == nil) == notes)
    }

    @Test("What a terminal receives has no control or format character left")
    func terminal() {
        let hostile = "a\u{1B}[2Jb\u{9B}c\u{202E}d\u{200B}e\nf\tg\u{7F}"
        let escaped = TextSafety.terminal(hostile)
        #expect(escaped == "a\\x1B[2Jb\\x9Bc\\u{202E}d\\u{200B}e\\x0Af\\x09g\\x7F")
        #expect(
            TextSafety.terminal(hostile, multiline: true)
                == "a\\x1B[2Jb\\x9Bc\\u{202E}d\\u{200B}e\nf\tg\\x7F"
        )
        #expect(
            !escaped.unicodeScalars.contains { TextSafety.isControl($0) || TextSafety.isFormat($0) }
        )
        // Emoji sequences and joiners pass.
        #expect(TextSafety.terminal("👩‍👩‍👧") == "👩‍👩‍👧")
    }

    @Test(
        "New reservations and changes refuse control and bidi characters; stored ones stay readable"
    )
    func inputAgainstRecords() throws {
        let store = UUID()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(throws: ValidationError.self) {
            try NewReservation(
                storeID: store,
                startsAt: start,
                endsAt: start + 1_800,
                topic: "Repair\u{202E}",
                customerID: UUID()
            )
        }
        #expect(throws: ValidationError.self) {
            try NewReservation(
                storeID: store,
                startsAt: start,
                endsAt: start + 1_800,
                topic: "Repair",
                notes: "call \u{1B}]0;x\u{07}",
                customerID: UUID()
            )
        }
        #expect(throws: Never.self) {
            try NewReservation(
                storeID: store,
                startsAt: start,
                endsAt: start + 1_800,
                topic: "Repair",
                notes: "line\n\tindented",
                customerID: UUID()
            )
        }
    }
}
