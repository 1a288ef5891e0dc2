import CommandSupport
import Foundation
import Testing

/// The suite's one JSON encoder and its one table cell, in process.
@Suite("One JSON encoder and one escaping rule for every app's output")
struct OutputTests {
    struct Sample: Encodable {
        var at: Date
        var text: String
        var empty: [String: Int]
    }

    @Test("Instants in the one RFC 3339 form; C1, DEL and bidi characters as \\u escapes")
    func json() throws {
        let sample = Sample(
            at: Date(timeIntervalSince1970: 1_795_417_200),
            text: "a\u{85}b\u{202E}c\u{7F}d/é",
            empty: [:]
        )
        let line = try JSONOutput.line(sample)
        #expect(
            line
                == #"{"at":"2026-11-23T07:00:00.000Z","empty":{},"text":"a\u0085b\u202Ec\u007Fd/é"}"#
        )
        let pretty = try JSONOutput.text(sample, pretty: true)
        #expect(pretty.contains(#""at": "2026-11-23T07:00:00.000Z""#))
        #expect(pretty.contains(#""empty": {}"#))
        // Still JSON that reads back to the same text.
        struct Back: Decodable { var text: String }
        let back = try JSONDecoder().decode(Back.self, from: Data(pretty.utf8))
        #expect(back.text == sample.text)
    }

    @Test("A table cell shows server text on one line with nothing that drives the terminal")
    func cell() {
        let cell = TextTable.Cell("Repair\u{1B}[2J\nnext\u{202E}")
        #expect(cell.text == "Repair\\x1B[2J next\\u{202E}")
        let notes = TextTable.Cell("line one\nline two\u{07}", multiline: true)
        #expect(notes.text == "line one\nline two\\x07")
    }

    @Test("The progress line draws a bar of the done share")
    func progress() {
        #expect(
            ProgressLine.render(done: 15, total: 30, noun: "images")
                == "[###############---------------] 15/30 images"
        )
    }
}

@Suite("Tables at a terminal's width, in display columns")
struct TableWidthTests {
    @Test("Wide characters take two columns, combining marks none")
    func widths() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("日本") == 4)
        #expect(DisplayWidth.of("e\u{301}") == 1)
        #expect(DisplayWidth.of("👩‍👩‍👧") == 2)
        #expect(DisplayWidth.truncate("日本語のテキスト", to: 7) == "日本語…")
    }

    @Test("A table wider than the terminal narrows its widest text columns with an ellipsis")
    func fitted() {
        var table = TextTable(header: ["CODE", "CUSTOMER", "PARTY", "TOPIC"])
        table.append([
            .init("K7QX-3J9M"), .init("Bartholomew Featherstonehaugh-Smythe"),
            .init("12", alignRight: true), .init("Suit fitting and a long talk about cloth"),
        ])
        table.append([.init("AB12-CD34"), .init("山田 太郎"), .init("2", alignRight: true), .init("x")])
        let rendered = table.render(color: false, width: 50)
        let lines = rendered.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { DisplayWidth.of($0) <= 50 }, "\(rendered)")
        #expect(rendered.contains("…"))
        #expect(rendered.contains("K7QX-3J9M") && rendered.contains("12"))
        // Columns stay aligned: every PARTY value ends in the same display column.
        let ends = zip(lines.dropFirst(), ["12  ", " 2  "]).map { line, party -> Int in
            DisplayWidth.of(line[..<line.range(of: party)!.upperBound])
        }
        #expect(Set(ends).count == 1, "\(rendered)")
        // Wide enough: nothing is cut.
        #expect(!table.render(color: false, width: 200).contains("…"))
    }
}
