import PNG
import ProductImages
import Testing

/// An image from rows of (red, green, blue, alpha) pixels.
func image(_ rows: [[(UInt8, UInt8, UInt8, UInt8)]]) -> PNGImage {
    var bytes: [UInt8] = []
    for row in rows {
        for (r, g, b, a) in row { bytes += [r, g, b, a] }
    }
    return PNGImage(width: rows.first?.count ?? 0, height: rows.count, rgba: bytes)
}

let red: (UInt8, UInt8, UInt8, UInt8) = (255, 0, 0, 255)
let green: (UInt8, UInt8, UInt8, UInt8) = (0, 255, 0, 255)
let blue: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 255, 255)
let white: (UInt8, UInt8, UInt8, UInt8) = (255, 255, 255, 255)
let black: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 255)
let clear: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)

@Suite("Drawing images with half blocks")
struct TerminalImageTests {
    @Test("Each cell is the top pixel over the bottom one, in 24-bit colour, reset at the end")
    func halfBlocks() {
        let drawing = TerminalImage(columns: 80, style: .trueColor)
            .render(image([[red, green], [blue, white]]))
        #expect(
            drawing
                == "\u{1B}[38;2;255;0;0m\u{1B}[48;2;0;0;255m▀\u{1B}[38;2;0;255;0m\u{1B}[48;2;255;255;255m▀\u{1B}[0m\n"
        )
    }

    @Test("Unchanged colours are not repeated")
    func runs() {
        let drawing = TerminalImage(columns: 80, style: .trueColor)
            .render(image([[red, red, red], [blue, blue, blue]]))
        #expect(drawing == "\u{1B}[38;2;255;0;0m\u{1B}[48;2;0;0;255m▀▀▀\u{1B}[0m\n")
    }

    @Test("Transparent pixels show the terminal's background")
    func transparency() {
        let drawing = TerminalImage(columns: 80, style: .trueColor)
            .render(image([[clear, red, clear], [clear, clear, blue]]))
        #expect(drawing == " \u{1B}[38;2;255;0;0m▀\u{1B}[38;2;0;0;255m▄\u{1B}[0m\n")
    }

    @Test("An odd number of pixel rows is stretched to whole cells")
    func oddHeight() {
        let drawing = TerminalImage(columns: 80, style: .trueColor).render(image([[green]]))
        #expect(drawing == "\u{1B}[38;2;0;255;0m\u{1B}[48;2;0;255;0m▀\u{1B}[0m\n")
        let three = TerminalImage(columns: 80, style: .trueColor)
            .render(image([[red], [green], [blue]]))
        #expect(three.split(separator: "\n").count == 2)
    }

    @Test(
        "A wide image is scaled to the columns, keeping its aspect ratio",
        arguments: [
            (96, 96, 30, 30, 15), (96, 96, 200, 96, 48), (100, 20, 10, 10, 1), (7, 50, 3, 3, 11),
        ]
    )
    func scaling(width: Int, height: Int, columns: Int, cells: Int, lines: Int) {
        let pixels = [UInt8](repeating: 200, count: width * height * 4)
        let drawing = TerminalImage(columns: columns, style: .trueColor)
            .render(PNGImage(width: width, height: height, rgba: pixels))
        let rows = drawing.split(separator: "\n")
        #expect(rows.count == lines)
        for row in rows {
            #expect(row.filter { $0 == "▀" || $0 == "▄" || $0 == " " }.count == cells)
        }
    }

    @Test("Scaling averages the pixels a cell covers, weighted by alpha")
    func averaging() {
        // 2×4 → 1×2: left column black, right white → grey; a transparent pixel adds nothing.
        let drawing = TerminalImage(columns: 1, style: .trueColor)
            .render(image([[black, white], [black, white], [red, clear], [red, clear]]))
        #expect(drawing == "\u{1B}[38;2;128;128;128m\u{1B}[48;2;255;0;0m▀\u{1B}[0m\n")
    }

    @Test("Without colour: shades by brightness and no escape sequences")
    func monochrome() {
        let drawing = TerminalImage(columns: 80, style: .monochrome)
            .render(
                image([
                    [white, black, (128, 128, 128, 255), white],
                    [white, black, (128, 128, 128, 255), clear],
                ])
            )
        #expect(drawing == "█ ▒▒\n")
        #expect(!drawing.contains("\u{1B}"))
        #expect(TerminalImage(columns: 80, style: .monochrome).render(image([[black]])) == "\n")
    }

    @Test("An empty image draws nothing")
    func empty() {
        #expect(
            TerminalImage(columns: 10, style: .trueColor).render(
                PNGImage(width: 0, height: 0, rgba: [])
            ) == ""
        )
    }
}

@Suite("Drawings without 24-bit colour keep their shapes")
struct ReducedColourTests {
    /// A pink disc on teal: two colours of almost the same luminance (the demo's images).
    static func disc(size: Int = 32) -> PNGImage {
        let pink: (UInt8, UInt8, UInt8, UInt8) = (230, 120, 170, 255)
        let teal: (UInt8, UInt8, UInt8, UInt8) = (60, 160, 160, 255)
        let rows = (0..<size).map { y in
            (0..<size).map { x in
                let dx = Double(x) - Double(size) / 2 + 0.5
                let dy = Double(y) - Double(size) / 2 + 0.5
                return dx * dx + dy * dy < Double(size * size) / 9 ? pink : teal
            }
        }
        return image(rows)
    }

    @Test("Under NO_COLOR two equally bright colours still draw apart: the disc shows")
    func monochromeShapes() {
        let drawing = TerminalImage(columns: 32, style: .monochrome).render(Self.disc())
        let lines = drawing.split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast()
        #expect(lines.count == 16)
        #expect(!drawing.contains("\u{1B}"))
        // The middle row has the disc's shade in the middle and another (or the blank
        // background) at the edge.
        let middle = Array(lines[8])
        #expect(middle.count > 16, "\(drawing)")
        #expect(middle.count > 16 && middle[15] != middle[1], "\(drawing)")
        // And the drawing is not one uniform shade.
        #expect(Set(drawing.filter { $0 != "\n" }).count >= 2, "\(drawing)")
    }

    @Test("On a 16-colour terminal only the 16 standard colours are used, dithered")
    func sixteenColours() {
        let drawing = TerminalImage(columns: 32, style: .sixteenColors).render(Self.disc())
        #expect(!drawing.contains("38;2;"))
        #expect(!drawing.contains("48;2;"))
        #expect(drawing.contains("\u{1B}[0;"))
        #expect(drawing.split(separator: "\n").count == 16)
    }
}
