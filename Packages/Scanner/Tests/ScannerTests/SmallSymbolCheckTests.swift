import Foundation
import Testing

@testable import Scanner
@testable import ScannerBarcodes
@testable import ScannerImages

/// The second look at small symbols: a misread of a small symbol is replaced by what its
/// scaled-up region reads; a right reading, and any reading of a large symbol, stay.
@Suite("Small-symbol check")
struct SmallSymbolCheckTests {
    /// zint's EAN-13 (2 px modules) scaled to `percent`, on a white border, turned by
    /// `degrees` clockwise.
    static func ean13(_ data: String, percent: Int, degrees: Int = 0) throws -> ImageBuffer {
        let png = try Fixtures.convert(
            Fixtures.zint("EANX", data),
            to: "png",
            options: ["-resize", "\(percent)%", "-bordercolor", "white", "-border", "20"]
                + (degrees == 0 ? [] : ["-background", "white", "-rotate", "\(degrees)"])
        )
        return try ImageBuffer(data: png, name: "ean13-\(percent)-\(degrees).png")
    }

    /// The one reading of `image`, and a copy of it carrying `text` instead (another valid
    /// EAN-13, as a misread that passes the check digit would be).
    static func readingAndMisread(_ image: ImageBuffer, misread text: String) throws
        -> (Barcode, Barcode)
    {
        let codes = BarcodeReader(options: .fast).scan(image)
        try #require(codes.count == 1, "\(codes)")
        var misread = codes[0]
        misread.text = text
        misread.bytes = Data(text.utf8)
        return (codes[0], misread)
    }

    /// `codes` after the check, in `image` at the origin, at the default effort.
    static func checked(_ codes: [Barcode], in image: ImageBuffer) -> [Barcode] {
        SmallSymbolCheck.check(
            codes,
            in: image.greyscale(),
            origin: ImagePoint(x: 0, y: 0),
            options: .standard
        )
    }

    @Test("A misread of a symbol with 1.4 px modules is replaced by the symbol's own payload")
    func misreadCorrected() throws {
        let image = try Self.ean13("590123412345", percent: 70)
        let (right, misread) = try Self.readingAndMisread(image, misread: "5901234128457")
        #expect(right.text == "5901234123457")
        let module = try #require(SmallSymbolCheck.moduleWidth(of: right))
        #expect(module < SmallSymbolCheck.moduleThreshold, "module \(module) px")

        let checked = Self.checked([misread], in: image)
        #expect(checked.map(\.text) == ["5901234123457"])
        // A right reading is confirmed, not changed; the corrected one is not reported twice.
        let both = Self.checked([right, misread], in: image)
        #expect(both == [right])
    }

    /// Turned, the symbol's bounding box holds its bars at an angle, which ZXing's row-by-row
    /// readers did not read again even scaled: the check read none of 97 tilted symbols of
    /// the families set and confirmed or corrected nothing there. It now reads the symbol
    /// turned upright, cut to its own rectangle.
    @Test(
        "A misread of a small symbol at an odd angle is replaced too",
        arguments: [35, 120, -62]
    )
    func tiltedMisreadCorrected(degrees: Int) throws {
        let upright = try Self.ean13("590123412345", percent: 70)
        let image = try Self.ean13("590123412345", percent: 70, degrees: degrees)
        // The reading the search would make of the turned symbol: the upright one's corners
        // turned with it (ImageMagick turns about the centre onto a canvas just large
        // enough), in ZXing's way, which follows the symbol. (zbar's corners are the box of
        // its scan lines, which says nothing of the angle: such readings keep the box.)
        let (read, _) = try Self.readingAndMisread(upright, misread: "5901234128457")
        let r = Double(degrees) * .pi / 180
        let (cx, cy) = (Double(upright.width) / 2, Double(upright.height) / 2)
        let (ox, oy) = (Double(image.width) / 2, Double(image.height) / 2)
        var right = read
        right.engine = .zxing
        right.points = read.points.map { p in
            let (x, y) = (Double(p.x) - cx, Double(p.y) - cy)
            return ImagePoint(
                x: Int((x * cos(r) - y * sin(r) + ox).rounded()),
                y: Int((x * sin(r) + y * cos(r) + oy).rounded())
            )
        }
        var misread = right
        misread.text = "5901234128457"
        misread.bytes = Data(misread.text.utf8)
        #expect(right.text == "5901234123457")
        let tilt = try #require(SmallSymbolCheck.orientation(of: right)).degrees
        let off = abs(tilt - Double(degrees)).truncatingRemainder(dividingBy: 180)
        #expect(min(off, 180 - off) < 3, "measured \(tilt)°")
        let checked = Self.checked([misread], in: image)
        #expect(checked.map(\.text) == ["5901234123457"])
        // Its place is the symbol's: the corrected reading lies where the right one does.
        let (a, b) = (checked.first?.boundingBox, right.boundingBox)
        #expect(abs((a?.x ?? 0) - b.x) <= 6 && abs((a?.y ?? 0) - b.y) <= 6, "\(a as Any) \(b)")
    }

    @Test("Readings are placed through a region of interest's origin")
    func origin() throws {
        let image = try Self.ean13("590123412345", percent: 70)
        let (_, misread) = try Self.readingAndMisread(image, misread: "5901234128457")
        // The same symbol seen in a crop 10 px right and 5 px down of the image.
        let crop = try #require(
            image.greyscale().cropped(
                to: PixelRect(x: 10, y: 5, width: image.width - 10, height: image.height - 5)
            )
        )
        let checked = SmallSymbolCheck.check(
            [misread],
            in: crop,
            origin: ImagePoint(x: 10, y: 5),
            options: .standard
        )
        #expect(checked.map(\.text) == ["5901234123457"])
        #expect(checked.first?.boundingBox.x ?? 0 >= 10)
    }

    @Test("A large symbol's reading is left as it is, and QR codes are never read again")
    func largeLeftAlone() throws {
        let image = try Self.ean13("590123412345", percent: 200)
        let (_, misread) = try Self.readingAndMisread(image, misread: "5901234128457")
        #expect(
            (SmallSymbolCheck.moduleWidth(of: misread) ?? 0) >= SmallSymbolCheck.moduleThreshold
        )
        let checked = Self.checked([misread], in: image)
        #expect(checked == [misread])
        let qr = Barcode(
            symbology: .qrCode,
            text: "x",
            bytes: Data("x".utf8),
            points: [ImagePoint(x: 0, y: 0), ImagePoint(x: 20, y: 20)],
            engine: .zxing,
            isGS1: false,
            symbologyIdentifier: "]Q1"
        )
        #expect(SmallSymbolCheck.moduleWidth(of: qr) == nil)
    }
}
