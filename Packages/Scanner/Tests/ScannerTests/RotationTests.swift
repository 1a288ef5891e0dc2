import Foundation
import InMemoryLogging
import Logging
import Testing

@testable import Scanner
@testable import ScannerBarcodes
@testable import ScannerImages

/// Symbols turned by right and odd angles, bars cut close to a label's edge, and MaxiCode.
@Suite("Rotated symbols, quiet zones and more symbologies")
struct RotationTests {
    static let reader = BarcodeReader()

    /// `data` turned by `degrees` (clockwise) on `background`, as PNG.
    static func turned(_ data: Data, by degrees: Double, background: String = "white") throws
        -> ImageBuffer
    {
        let png = try Fixtures.convert(
            data,
            to: "png",
            options: ["-alpha", "remove", "-background", background, "-rotate", "\(degrees)"]
        )
        return try ImageBuffer(data: png, name: "turned \(degrees)")
    }

    @Test(
        "Dev corpus images turned by 90, 180 and 270 degrees read as their originals, and only that",
        arguments: [
            "ean13-1/37.webp", "datamatrix-1/mod-size-1.png", "datamatrix-1/#378.png",
            "code128-1/1.png", "pdf417-1/01.png", "upca-1/2.webp", "qrcode-1/1.webp",
            // Read by the module fit only; at 90° and 270° only since its bars, lying, are
            // turned a quarter pixel for pixel (``GreyOps/quarterTurned(_:)``).
            "ean13-1/36.webp",
        ],
        [90.0, 180, 270]
    )
    func rightAngles(path: String, degrees: Double) throws {
        let url = Fixtures.corpus.appendingPathComponent(path)
        let item = try #require(Corpus.expected.first { $0.image == url }, "\(path) in the corpus")
        let codes = Self.reader.scan(try Self.turned(try Data(contentsOf: url), by: degrees))
        #expect(Corpus.matches(item, codes), "\(path) at \(degrees)°: \(codes.map(\.text))")
        // ean13-1/37 turned by 180° and 270° was read as 1040183002834 by zbar.
        #expect(codes.count == 1, "\(path) at \(degrees)°: \(codes.map(\.text))")
    }

    @Test(
        "Linear and PDF417 symbols at odd angles are turned upright by their bars' angle",
        arguments: [("CODE128", "SHOPFLOOR-2026-17"), ("PDF417", "Shopfloor aisle 12 bay 3")],
        [-30.0, 13, 30, 62]
    )
    func oddAngles(symbol: (String, String), degrees: Double) throws {
        let code = try Fixtures.zint(symbol.0, symbol.1, extra: ["--scale=2", "--height=20"])
        let codes = Self.reader.scan(try Self.turned(code, by: degrees))
        #expect(codes.map(\.text) == [symbol.1], "\(symbol.0) at \(degrees)°")
    }

    /// Each failed before the sharp rotation (the area map blurred their one- and two-pixel
    /// modules into grey) and the turned-and-scaled stage.
    @Test(
        "PDF417s with modules one or two pixels wide read at odd angles",
        arguments: [
            ("pdf417-1/04.png", 29.0), ("pdf417-1/06.png", 65), ("pdf417-1/07.png", 66),
            ("pdf417-1/12-mixed-ecis.png", 72),
        ]
    )
    func smallModulesAtOddAngles(path: String, degrees: Double) throws {
        let url = Fixtures.corpus.appendingPathComponent(path)
        let item = try #require(Corpus.expected.first { $0.image == url }, "\(path) in the corpus")
        let codes = Self.reader.scan(try Self.turned(try Data(contentsOf: url), by: degrees))
        #expect(Corpus.matches(item, codes), "\(path) at \(degrees)°: \(codes.map(\.text))")
    }

    /// The families set's code39/plain-a200-s150 (its seed): ZXing's first pass "located" a
    /// DataMatrix among the bars, and the bars, taken in as that guess's extent, were
    /// searched as a 2D region only. Other seeds read before as after.
    @Test("Bars where ZXing guessed a 2D symbol still get the linear stages")
    func barsUnderA2DGuess() throws {
        let code = try Fixtures.zint("CODE39", "SHOP-2026", extra: ["--scale=1"])
        let image = try Fixtures.photographed(
            code,
            percent: 150,
            degrees: 200,
            blur: 0.8,
            seed: 679_143_072
        )
        let codes = Self.reader.scan(try ImageBuffer(data: image, name: "code 39 at 200°"))
        #expect(codes.map(\.text) == ["SHOP-2026"])
    }

    /// At 27° and 33° zbar reads this EAN-13 first, and its box of a tilted symbol is a few
    /// scan lines', so the bars (at 33° with a ZXing guess of a UPC-E on them) stay a
    /// candidate; at 63° ZXing reads it, and the label's grey ground around it, whose box
    /// takes it in, is one. Each stage read the EAN-13 again and went on: six stages, about
    /// 45 ms, for nothing. A stage that reads only symbols decoded before, whose boxes take
    /// in most of the region or whose texture is far stronger than the region's, now ends
    /// its search.
    @Test(
        "A region holding only a symbol read before ends at its first stage",
        arguments: [
            (27, 150, "(decoded before)"), (33, 150, "(decoded before)"), (63, 100, "(ground)"),
        ]
    )
    func regionOfADecodedSymbol(photo: (degrees: Int, scale: Int, end: String)) throws {
        let degrees = photo.degrees
        let code = try Fixtures.zint("EANX", "590123412345", extra: ["--scale=1"])
        let image = try Fixtures.photographed(
            code,
            percent: photo.scale,
            degrees: degrees,
            blur: 0.8,
            seed: 1
        )
        let log = InMemoryLogHandler()
        var logger = Logger(label: "region search") { _ in log }
        logger.logLevel = .debug
        let reader = BarcodeReader(options: .standard, logger: logger)
        let codes = reader.scan(try ImageBuffer(data: image, name: "ean-13 at \(degrees)°"))
        #expect(codes.map(\.text) == ["5901234123457"])
        let regions = log.entries.filter { $0.message.description == "scanner region" }
        let stages = log.entries.filter { $0.message.description == "scanner stage" }
        #expect(!regions.isEmpty)
        for region in regions {
            let name = region.metadata["name"].map { "\($0)" } ?? ""
            #expect(name.hasSuffix(photo.end), "\(region.metadata)")
        }
        #expect(stages.count == regions.count)
    }

    /// ZXing read "1234" from a row crossing part of the symbol beside the whole reading
    /// (seed 5, PNG, before the length and containment checks), and the small-symbol
    /// check's second look took it for a correction of the whole reading (seed 1, JPEG).
    /// Seed 774257017 (the families set's itf/plain-a045-s150): the first pass read only
    /// "1234", which hid the region's whole reading as a contradiction and was then refused.
    @Test(
        "An ITF at an angle reads whole, never as a part of itself",
        arguments: [
            (5, 100, 27, 0.5, "png"), (6, 100, 27, 0.5, "png"), (7, 100, 27, 0.5, "png"),
            (1, 70, 33, 0.4, "jpg"), (774_257_017, 150, 45, 0.8, "png"),
        ]
    )
    func itfWhole(photo: (seed: Int, scale: Int, degrees: Int, blur: Double, format: String))
        throws
    {
        let code = try Fixtures.zint("C25INTER", "12345678", extra: ["--scale=1"])
        let image = try Fixtures.photographed(
            code,
            percent: photo.scale,
            degrees: photo.degrees,
            blur: photo.blur,
            seed: photo.seed,
            format: photo.format,
            quality: 45
        )
        let codes = Self.reader.scan(try ImageBuffer(data: image, name: "itf \(photo)"))
        #expect(codes.map(\.text) == ["12345678"], "\(photo)")
    }

    @Test("ITF readings under 6 digits, or inside a longer one over the same bars, are dropped")
    func itfPartials() {
        func itf(_ text: String, _ points: [ImagePoint]) -> Barcode {
            Barcode(
                symbology: .itf,
                text: text,
                bytes: Data(text.utf8),
                points: points,
                engine: .zxing,
                isGS1: false,
                symbologyIdentifier: "]I0"
            )
        }
        let whole = itf("12345678", [ImagePoint(x: 10, y: 50), ImagePoint(x: 200, y: 50)])
        let part = itf("345678", [ImagePoint(x: 60, y: 60), ImagePoint(x: 200, y: 60)])
        let elsewhere = itf("234567", [ImagePoint(x: 10, y: 400), ImagePoint(x: 200, y: 400)])
        var merger = Merger(limit: nil)
        merger.add([itf("1234", [ImagePoint(x: 10, y: 55), ImagePoint(x: 90, y: 55)])])
        #expect(merger.isEmpty)
        merger.add([part, whole, elsewhere])
        #expect(merger.sorted().map(\.text) == ["12345678", "234567"])
        #expect(merger.sorted().last?.points == elsewhere.points)
    }

    @Test(
        "The sharp rotation maps its points back to the source's, turned and scaled",
        arguments: [(37.0, 1.0), (-71, 1), (37, 2), (150, 2)]
    )
    func sharpRotationMapsBack(degrees: Double, scale: Double) throws {
        // A white image with a dark 3×3 square centred on pixel (20, 12).
        let (width, height) = (60, 40)
        var pixels = [UInt8](repeating: 255, count: width * height)
        for y in 11...13 { for x in 19...21 { pixels[y * width + x] = 0 } }
        let image = try ImageBuffer(width: width, height: height, format: .grey, pixels: pixels)
        let (turned, back) = GreyOps.rotatedSharp(image, degrees: degrees, scale: scale)
        // The square's centre in the turned image: the darkness-weighted mean.
        var (sx, sy, sum) = (0.0, 0.0, 0.0)
        for y in 0..<turned.height {
            for x in 0..<turned.width {
                let dark = Double(255 - Int(turned.pixels[y * turned.stride + x]))
                guard dark > 64 else { continue }
                sx += dark * Double(x)
                sy += dark * Double(y)
                sum += dark
            }
        }
        #expect(sum > 0)
        let centre = back.apply(
            ImagePoint(x: Int((sx / sum).rounded()), y: Int((sy / sum).rounded()))
        )
        #expect(abs(centre.x - 20) <= 1 && abs(centre.y - 12) <= 1, "\(centre) for (20, 12)")
        // The canvas holds the whole turned image, scaled.
        let r = degrees * .pi / 180
        let expectedWidth = (Double(width) * abs(cos(r)) + Double(height) * abs(sin(r))) * scale
        #expect(abs(Double(turned.width) - expectedWidth) <= scale + 1)
    }

    /// `count` grey levels from a seeded linear congruential generator: noise, so that any
    /// shift or wrong turn of an image shows in its pixels.
    static func noise(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }

    @Test("A quarter turn moves every pixel unchanged and maps each back to where it came from")
    func quarterTurn() throws {
        // Noise, and a stride wider than the rows, so that any shift, transposition or read
        // past a row's end shows.
        let (width, height, stride) = (7, 4, 9)
        let pixels = Self.noise(count: stride * height, seed: 11)
        let image = try ImageBuffer(
            width: width,
            height: height,
            format: .grey,
            stride: stride,
            pixels: pixels
        )
        let (turned, back) = GreyOps.quarterTurned(image)
        #expect(turned.width == height && turned.height == width)
        for y in 0..<turned.height {
            for x in 0..<turned.width {
                // The pixel's centre, mapped back, is the centre of the pixel it came from.
                let (sx, sy) = back.apply(x: Double(x) + 0.5, y: Double(y) + 0.5)
                let source = (x: Int(sx.rounded(.down)), y: Int(sy.rounded(.down)))
                #expect(sx - Double(source.x) == 0.5 && sy - Double(source.y) == 0.5)
                #expect(
                    turned.pixels[y * turned.stride + x]
                        == image.pixels[source.y * stride + source.x],
                    "(\(x), \(y)) from \(source)"
                )
            }
        }
        // Clockwise on screen: the source's bottom-left corner is the top-left.
        #expect(turned.pixels[0] == image.pixels[(height - 1) * stride])
        // Four turns give the source's pixels back.
        var four = image
        for _ in 0..<4 { four = GreyOps.quarterTurned(four).0 }
        #expect(four.width == width && four.height == height)
        for y in 0..<height {
            #expect(
                Array(four.pixels[(y * four.stride)..<(y * four.stride + width)])
                    == Array(pixels[(y * stride)..<(y * stride + width)])
            )
        }
    }

    @Test(
        "An oriented rectangle is the sharp rotation's canvas cut to it, mapping points back",
        arguments: [(37.0, 2.0), (-71, 1), (150, 3)]
    )
    func orientedRectangle(degrees: Double, scale: Double) throws {
        // Noise, so that any shift or wrong turn shows in the pixels.
        let (width, height) = (61, 43)
        let pixels = Self.noise(count: width * height, seed: 7)
        let image = try ImageBuffer(width: width, height: height, format: .grey, pixels: pixels)
        // Centred on the image's centre with the canvas's size: the same pixels as turning
        // the whole image by the opposite angle.
        let (canvas, _) = GreyOps.rotatedSharp(image, degrees: -degrees, scale: scale)
        let whole = GreyOps.Rotation(image, degrees: -degrees)
        let (cut, _) = GreyOps.orientedRect(
            image,
            centre: (Double(width) / 2, Double(height) / 2),
            degrees: degrees,
            width: Double(whole.width),
            height: Double(whole.height),
            scale: scale
        )
        #expect(cut.width == canvas.width && cut.height == canvas.height)
        #expect(cut.pixels == canvas.pixels)
        // Off the centre and smaller: the rectangle's middle is the centre asked for, and
        // its first row runs along `degrees`.
        let centre = (x: 22.0, y: 17.0)
        let (small, back) = GreyOps.orientedRect(
            image,
            centre: centre,
            degrees: degrees,
            width: 20,
            height: 10,
            scale: scale
        )
        #expect(small.width == Int((20 * scale).rounded()))
        #expect(small.height == Int((10 * scale).rounded()))
        let middle = back.apply(ImagePoint(x: small.width / 2, y: small.height / 2))
        #expect(abs(Double(middle.x) - centre.x) <= 1 && abs(Double(middle.y) - centre.y) <= 1)
        let start = back.apply(ImagePoint(x: 0, y: 0))
        let end = back.apply(ImagePoint(x: small.width, y: 0))
        let direction = atan2(Double(end.y - start.y), Double(end.x - start.x)) * 180 / .pi
        let off = abs(direction - degrees).truncatingRemainder(dividingBy: 360)
        #expect(min(off, 360 - off) < 4, "first row at \(direction)° for \(degrees)°")
        // Each pixel is the source's near where `back` puts it (noise: within the spread of
        // Catmull-Rom between neighbours, so a wrong place would miss by far more often).
        var far = 0
        for y in stride(from: 2, to: small.height - 2, by: 3) {
            for x in stride(from: 2, to: small.width - 2, by: 3) {
                let p = back.apply(ImagePoint(x: x, y: y))
                guard p.x >= 1, p.y >= 1, p.x < width - 1, p.y < height - 1 else { continue }
                let near = (-1...1).flatMap { dy in
                    (-1...1).map { dx in Int(pixels[(p.y + dy) * width + p.x + dx]) }
                }
                let v = Int(small.pixels[y * small.stride + x])
                if v < near.min()! - 40 || v > near.max()! + 40 { far += 1 }
            }
        }
        #expect(far == 0)
    }

    @Test("Turned there and back, two-pixel stripes keep more contrast than with the area map")
    func sharpRotationKeepsContrast() throws {
        let size = 120
        var pixels = [UInt8](repeating: 0, count: size * size)
        for y in 0..<size {
            for x in 0..<size { pixels[y * size + x] = (x / 2) % 2 == 0 ? 20 : 235 }
        }
        let image = try ImageBuffer(width: size, height: size, format: .grey, pixels: pixels)
        /// Mean distance from mid-grey over the middle 40×40 of a round trip by `turn`.
        func contrast(_ turn: (ImageBuffer, Double) -> (ImageBuffer, PointTransform)) -> Double {
            let there = turn(image, 33).0
            let back = turn(there, -33).0
            let (x0, y0) = (back.width / 2 - 20, back.height / 2 - 20)
            var total = 0
            for y in y0..<(y0 + 40) {
                for x in x0..<(x0 + 40) {
                    total += abs(Int(back.pixels[y * back.stride + x]) - 128)
                }
            }
            return Double(total) / 1600
        }
        let sharp = contrast { GreyOps.rotatedSharp($0, degrees: $1) }
        let areaMap = contrast { GreyOps.rotated($0, degrees: $1) }
        #expect(sharp > areaMap * 1.2, "sharp \(sharp), area map \(areaMap)")
    }

    @Test(
        "The bars' angle is measured within a degree and a half from a texture angle 12° off",
        arguments: [-62.0, -8, 0, 21, 45]
    )
    func barAngle(degrees: Double) throws {
        let code = try Fixtures.zint("CODE128", "0123456789", extra: ["--scale=3"])
        let image = try Self.turned(code, by: degrees).greyscale()
        for estimate in [degrees - 12, degrees + 12] {
            let measured = try #require(RegionFinder.barAngle(image, near: estimate))
            #expect(abs(measured - degrees) <= 1.5, "measured \(measured)° for \(degrees)°")
        }
    }

    @Test("Bars printed up to a label's edge on a textured surface read (quiet zones painted in)")
    func quietZones() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let code = dir.appendingPathComponent("code.png")
        try Fixtures.zint("CODE128", "4P2B7PPDLMVNQ", extra: ["--scale=2", "--height=40"])
            .write(to: code)
        // A grainy surface, the label (bars to its left and right edges) pasted on it.
        let photo = try Fixtures.run(
            "convert",
            [
                "-size", "120x50", "xc:gray50", "-seed", "7", "+noise", "Random", "-resize",
                "960x400!", "-colorspace", "gray", code.path, "-gravity", "center", "-composite",
                "png:-",
            ]
        )
        let codes = Self.reader.scan(try ImageBuffer(data: photo, name: "label on grain"))
        #expect(codes.map(\.text) == ["4P2B7PPDLMVNQ"])
    }

    @Test("Painting quiet zones keeps the bars and paints both sides in their light level")
    func quietZonePainting() throws {
        // 20 px of noise, bars from x = 20 to 79, 20 px of noise.
        let width = 100
        let height = 30
        var pixels = [UInt8](repeating: 0, count: width * height)
        var seed: UInt32 = 1
        for y in 0..<height {
            for x in 0..<width {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                let noise = UInt8(truncatingIfNeeded: 60 + (seed >> 24) % 120)
                pixels[y * width + x] =
                    (20..<80).contains(x) ? ((x / 3) % 2 == 0 ? 20 : 230) : noise
            }
        }
        let image = try ImageBuffer(width: width, height: height, format: .grey, pixels: pixels)
        let zoned = try #require(RegionFinder.withQuietZones(image))
        #expect(zoned.width == width && zoned.height == height)
        for y in [0, 15, 29] {
            #expect((0..<18).allSatisfy { zoned.pixels[y * width + $0] >= 200 })
            #expect((82..<100).allSatisfy { zoned.pixels[y * width + $0] >= 200 })
            #expect((21..<78).allSatisfy { zoned.pixels[y * width + $0] == pixels[y * width + $0] })
        }
    }

    @Test("A label's own edge a module from the bars is painted over, not kept as a bar")
    func quietZoneBeyondLabelEdge() throws {
        // A dark ground (60), a label's soft edge (155) into its white (250) three pixels
        // before the first bar and after the last: bars from x = 23 to 79.
        let width = 104
        let height = 30
        var row = [UInt8](repeating: 60, count: width)
        row[19] = 155
        row[84] = 155
        for x in 20...83 { row[x] = 250 }
        for x in 23..<80 where ((x - 23) / 3) % 2 == 0 { row[x] = 20 }
        let pixels = Array((0..<height).map { _ in row }.joined())
        let image = try ImageBuffer(width: width, height: height, format: .grey, pixels: pixels)
        let zoned = try #require(RegionFinder.withQuietZones(image))
        for y in [0, 15, 29] {
            let line = Array(zoned.pixels[(y * width)..<(y * width + width)])
            #expect(line[0..<23].allSatisfy { $0 >= 240 }, "left of the bars: \(line[0..<23])")
            #expect(line[80...].allSatisfy { $0 >= 240 }, "right of the bars: \(line[80...])")
            #expect(line[23..<80] == row[23..<80])
        }
    }

    @Test("MaxiCode reads, alone and with a margin in a larger picture; its name parses")
    func maxiCode() throws {
        let code = try Fixtures.zint("MAXICODE", "Shopfloor parcel 0457")
        #expect(
            Self.reader.scan(try ImageBuffer(data: code, name: "maxicode")).map(\.text) == [
                "Shopfloor parcel 0457"
            ]
        )
        let framed = try Fixtures.convert(
            code,
            to: "png",
            options: ["-bordercolor", "white", "-border", "60", "-colorspace", "gray"]
        )
        let codes = Self.reader.scan(try ImageBuffer(data: framed, name: "framed"))
        #expect(codes.map(\.symbology) == [.maxiCode])
        #expect(Symbology(name: "maxicode") == .maxiCode)
        #expect(Symbology.maxiCode.commandLineName == "maxicode")
    }

    /// Floors a little under what the default effort read when this was written (526 of
    /// 552; 521 before the sharp rotation, 504 before the bars' angle, quiet zones and the
    /// zbar check).
    @Test(
        "The rotated set: the default effort reads at least 522 of 552, and nothing without codes"
    )
    func rotatedSet() async throws {
        let (read, expected, falsePositives) = await Corpus.score(
            under: try RotatedSet.load(),
            with: Self.reader
        )
        #expect(expected == 552)
        #expect(read >= 522, "read \(read) of \(expected)")
        #expect(falsePositives.isEmpty, "\(falsePositives)")
    }
}

/// The rotated set of `scripts/fixtures/rotated-barcodes.py`: every dev corpus image turned
/// by 90, 180 and 270 degrees and one odd angle, expected payloads carried over (cached per
/// machine, generated on first use).
enum RotatedSet {
    static func load() throws -> URL { try Fixtures.generatedSet("rotated-barcodes") }
}
