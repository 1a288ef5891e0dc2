import Foundation
import Testing

@testable import Scanner
@testable import ScannerBarcodes

/// The second look at small symbols: a misread of a small symbol is replaced by what its
/// scaled-up region reads; a right reading, and any reading of a large symbol, stay.
@Suite("Small-symbol check")
struct SmallSymbolCheckTests {
    /// zint's EAN-13 (2 px modules) scaled to `percent`, on a white border.
    static func ean13(_ data: String, percent: Int) throws -> ImageBuffer {
        let png = try Fixtures.convert(
            Fixtures.zint("EANX", data),
            to: "png",
            options: ["-resize", "\(percent)%", "-bordercolor", "white", "-border", "20"]
        )
        return try ImageBuffer(data: png, name: "ean13-\(percent).png")
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

    @Test("A misread of a symbol with 1.4 px modules is replaced by the symbol's own payload")
    func misreadCorrected() throws {
        let image = try Self.ean13("590123412345", percent: 70)
        let (right, misread) = try Self.readingAndMisread(image, misread: "5901234128457")
        #expect(right.text == "5901234123457")
        let module = try #require(SmallSymbolCheck.moduleWidth(of: right))
        #expect(module < SmallSymbolCheck.moduleThreshold, "module \(module) px")

        let checked = SmallSymbolCheck.check(
            [misread],
            in: image.greyscale(),
            origin: ImagePoint(x: 0, y: 0),
            options: .standard
        )
        #expect(checked.map(\.text) == ["5901234123457"])
        // A right reading is confirmed, not changed; the corrected one is not reported twice.
        let both = SmallSymbolCheck.check(
            [right, misread],
            in: image.greyscale(),
            origin: ImagePoint(x: 0, y: 0),
            options: .standard
        )
        #expect(both == [right])
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
        let checked = SmallSymbolCheck.check(
            [misread],
            in: image.greyscale(),
            origin: ImagePoint(x: 0, y: 0),
            options: .standard
        )
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
