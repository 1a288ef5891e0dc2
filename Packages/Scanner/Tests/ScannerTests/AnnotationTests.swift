import Foundation
import Testing

@testable import Scanner

/// Annotated pictures: drawn, encoded with libpng, decoded again and inspected pixel by pixel.
@Suite("Annotation: pictures of what was read")
struct AnnotationTests {
    /// The RGB of the pixel at (x, y).
    static func rgb(_ image: ImageBuffer, _ x: Int, _ y: Int) -> (Int, Int, Int) {
        let i = y * image.stride + x * image.format.channels
        return (Int(image.pixels[i]), Int(image.pixels[i + 1]), Int(image.pixels[i + 2]))
    }

    /// Whether a pixel within `radius` of (x, y) has the colour `want` (each channel within 40).
    static func hasColour(
        _ image: ImageBuffer,
        near x: Int,
        _ y: Int,
        _ want: (UInt8, UInt8, UInt8),
        radius: Int = 2
    ) -> Bool {
        for dy in -radius...radius {
            for dx in -radius...radius {
                let px = x + dx
                let py = y + dy
                guard px >= 0, py >= 0, px < image.width, py < image.height else { continue }
                let (r, g, b) = rgb(image, px, py)
                if abs(r - Int(want.0)) < 40, abs(g - Int(want.1)) < 40, abs(b - Int(want.2)) < 40 {
                    return true
                }
            }
        }
        return false
    }

    /// Pixels of colour `want` in a rectangle.
    static func count(
        _ image: ImageBuffer,
        in rect: PixelRect,
        _ want: (UInt8, UInt8, UInt8)
    ) -> Int {
        var n = 0
        for y in max(0, rect.y)..<min(image.height, rect.y + rect.height) {
            for x in max(0, rect.x)..<min(image.width, rect.x + rect.width) {
                let (r, g, b) = rgb(image, x, y)
                if abs(r - Int(want.0)) < 40, abs(g - Int(want.1)) < 40, abs(b - Int(want.2)) < 40 {
                    n += 1
                }
            }
        }
        return n
    }

    @Test("A symbol's outline is drawn on its corners and its text above it, in a PNG that decodes")
    func symbolOutline() throws {
        let image = try ImageBuffer(
            data: Fixtures.qrencode("annotate me", extra: ["-s", "8", "-m", "4"])
        )
        let symbols = BarcodeReader().scan(image)
        let symbol = try #require(symbols.first)
        #expect(symbol.points.count == 4)
        let rendered = try #require(Annotation.render(image, symbols: symbols, text: nil))
        // A QR code of 232 px is enlarged 4× so that its label is readable.
        #expect(rendered.scale == 1000 / max(image.width, image.height))
        let picture = try ImageBuffer(data: rendered.image.pngData(), name: "annotated")
        #expect(picture.format == .rgb)
        #expect(picture.width == image.width * rendered.scale)
        #expect(picture.height == image.height * rendered.scale)
        for corner in symbol.points {
            #expect(
                Self.hasColour(
                    picture,
                    near: corner.x * rendered.scale,
                    corner.y * rendered.scale,
                    Annotation.symbolColour
                ),
                "no outline at corner \(corner)"
            )
        }
        // Inside the symbol, away from the outline: only the code's black and white.
        let box = symbol.boundingBox
        let centre = (
            (box.x + box.width / 2) * rendered.scale, (box.y + box.height / 2) * rendered.scale
        )
        #expect(!Self.hasColour(picture, near: centre.0, centre.1, Annotation.symbolColour))
        let (r, g, b) = Self.rgb(picture, centre.0, centre.1)
        #expect(r == g && g == b)
        // The label: green glyphs in the band just above the symbol.
        let above = PixelRect(
            x: box.x * rendered.scale,
            y: box.y * rendered.scale - 40,
            width: box.width * rendered.scale,
            height: 36
        )
        #expect(Self.count(picture, in: above, Annotation.symbolColour) > 50)
        // Nothing is drawn far from the symbol: the bottom-right corner stays white.
        #expect(Self.rgb(picture, picture.width - 2, picture.height - 2) == (255, 255, 255))
    }

    @Test("Text lines get boxes in blue, or orange when doubtful, on the lines' edges")
    func textBoxes() throws {
        let image = try OCRFixtures.image("SERIAL 4006381333931\nModel RX-200 Blue", dpi: 300)
        var text = try TextReader(options: .fast).read(image)
        try #require(text.lines.count == 2)
        text.lines[1].confidence = 0.3
        let rendered = try #require(Annotation.render(image, symbols: [], text: text))
        let picture = try ImageBuffer(data: rendered.image.pngData(), name: "annotated")
        let s = rendered.scale
        for (line, colour) in zip(
            text.lines,
            [Annotation.textColour, Annotation.doubtfulTextColour]
        ) {
            let b = line.box
            // The middle of the left and right edges, and of the bottom edge.
            #expect(Self.hasColour(picture, near: b.x * s, (b.y + b.height / 2) * s, colour))
            #expect(
                Self.hasColour(
                    picture,
                    near: (b.x + b.width) * s,
                    (b.y + b.height / 2) * s,
                    colour
                )
            )
            #expect(
                Self.hasColour(picture, near: (b.x + b.width / 2) * s, (b.y + b.height) * s, colour)
            )
        }
        let other = Annotation.textColour
        let doubtful = text.lines[1].box
        #expect(
            !Self.hasColour(
                picture,
                near: doubtful.x * s,
                (doubtful.y + doubtful.height / 2) * s,
                other
            )
        )
    }

    @Test("A linear symbol found on one scan line gets a box that shows")
    func scanLine() throws {
        let image = try ImageBuffer(
            width: 400,
            height: 200,
            format: .grey,
            pixels: [UInt8](repeating: 255, count: 80_000)
        )
        let symbol = Barcode(
            symbology: .ean13,
            text: "4006381333931",
            bytes: Data("4006381333931".utf8),
            points: [ImagePoint(x: 100, y: 100), ImagePoint(x: 300, y: 100)],
            engine: .zbar,
            isGS1: false,
            symbologyIdentifier: "]E0"
        )
        let rendered = try #require(Annotation.render(image, symbols: [symbol], text: nil))
        let s = rendered.scale
        let picture = rendered.image
        #expect(
            Self.count(
                picture,
                in: PixelRect(x: 90 * s, y: 80 * s, width: 220 * s, height: 40 * s),
                Annotation.symbolColour
            ) > 100
        )
    }

    @Test(
        "Grey, RGB and RGBA pixels survive the PNG encoder exactly",
        arguments: ImageBuffer.PixelFormat.allCases
    )
    func pngRoundTrip(format: ImageBuffer.PixelFormat) throws {
        var generator = SystemRandomNumberGenerator()
        let width = 37
        let height = 23
        let stride = width * format.channels + 5
        let pixels = (0..<(stride * height)).map { _ in UInt8.random(in: 0...255, using: &generator)
        }
        let image = try ImageBuffer(
            width: width,
            height: height,
            format: format,
            stride: stride,
            pixels: pixels
        )
        let decoded = try ImageBuffer(data: image.pngData())
        #expect(decoded.width == width && decoded.height == height)
        #expect(decoded.format == format)
        for y in 0..<height {
            let row = y * stride
            let out = y * decoded.stride
            #expect(
                Array(decoded.pixels[out..<(out + width * format.channels)])
                    == Array(pixels[row..<(row + width * format.channels)])
            )
        }
    }

    @Test(
        "Writing a PNG replaces a file whole, and a missing directory is an unwritable error naming it"
    )
    func writeErrors() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let image = try ImageBuffer(
            width: 8,
            height: 8,
            format: .grey,
            pixels: [UInt8](repeating: 9, count: 64)
        )
        let url = dir.appendingPathComponent("out.png")
        try Data("not a png".utf8).write(to: url)
        try image.writePNG(to: url)
        #expect(try ImageBuffer(contentsOf: url).width == 8)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["out.png"])

        let missing = dir.appendingPathComponent("no/such/dir/out.png")
        #expect {
            try image.writePNG(to: missing)
        } throws: { error in
            guard let error = error as? ImageError else { return false }
            return error.code == .unwritable && error.input == missing.path
        }
    }

    @Test(
        "Labels keep printable ASCII, mark other characters and stop at 80 characters",
        arguments: [
            ("QR-Code:hello", "QR-Code:hello"), ("Grüße", "Gr??e"), ("a\nb\tc", "a?b?c"),
            (String(repeating: "x", count: 100), String(repeating: "x", count: 80) + "..."),
        ]
    )
    func printable(input: String, expected: String) {
        #expect(Annotation.printable(input) == expected)
    }
}
