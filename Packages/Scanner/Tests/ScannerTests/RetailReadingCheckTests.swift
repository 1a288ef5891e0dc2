import Foundation
import ScannerImages
import Testing

@testable import ScannerBarcodes

@Suite("EAN and UPC readings checked: quiet zones, and blurred digits fitted")
struct RetailReadingCheckTests {
    /// An EAN-13 as ``BlurredUPCEANTests/photographed(_:module:tilt:sigma:height:)`` draws it.
    static func photo(
        _ text: String,
        _ module: Double,
        _ tilt: Double,
        _ sigma: Double,
        _ height: Int
    )
        throws -> ImageBuffer
    {
        try BlurredUPCEANTests.photographed(
            text,
            module: module,
            tilt: tilt,
            sigma: sigma,
            height: height
        )
    }

    /// Blurred EAN-13s at an angle whose left half zbar reads as a UPC-E (every parity
    /// pattern of a first digit other than 0 is one of UPC-E number system 1's, and a
    /// blurred centre guard passes for UPC-E's end guard): the bars beyond it say it is part
    /// of a longer symbol.
    @Test(
        "zbar's UPC-E out of a blurred EAN-13's left half is no reading",
        arguments: [
            ("6955578365980", 3.53, -0.144, 0.59, 60), ("5597796476508", 3.2, 0.021, 0.58, 90),
            ("9325868859654", 3.03, -0.135, 0.64, 60),
        ]
    )
    func upcEInsideEAN13(text: String, module: Double, tilt: Double, sigma: Double, height: Int)
        throws
    {
        let image = try Self.photo(text, module, tilt, sigma, height)
        let zbar = ZBarEngine.read(image, symbologies: [.ean13, .upcA, .upcE, .ean8])
        #expect(!zbar.contains { $0.symbology == .upcE }, "\(zbar.map(\.text))")
        let codes = BarcodeReader().scan(image)
        #expect(codes.allSatisfy { $0.text == text }, "\(codes.map(\.text))")
    }

    /// Blurred EAN-13s that zbar reads wrong on every scan line (its right half right, its
    /// left half's digits otherwise, the check digit passing by chance), and again from the
    /// region scaled up: the fit of the modules reads them right and replaces the reading.
    @Test(
        "zbar's wrong digits of a blurred EAN-13 are replaced by the fit's",
        arguments: [
            ("8815978040826", 3.13, 0.047, 0.64, 90), ("8478009415989", 3.12, -0.098, 0.66, 90),
        ]
    )
    func wrongDigitsReplaced(text: String, module: Double, tilt: Double, sigma: Double, height: Int)
        throws
    {
        let image = try Self.photo(text, module, tilt, sigma, height)
        let codes = BarcodeReader().scan(image)
        #expect(codes.map(\.text) == [text])
        #expect(codes.map(\.engine) == [.templates])
    }

    /// A UPC-E on a label cut 3 modules beyond its end guard, a dark ground after the cut,
    /// and its own digits printed beside its guards: one step down, no bar.
    @Test("A UPC-E beside a label's edge and its own digits still reads from zbar")
    func upcEBesideALabelEdge() throws {
        let code = try Fixtures.zint("UPCE", "0123456", extra: ["--scale=1", "--height=40"])
        let label = try ImageBuffer(data: code, name: "upc-e").greyscale()
        // The last dark column of the bars' rows, then 3 modules (2 px each) of the label.
        let row = 20
        let last = try #require(
            (0..<label.width).last { label.pixels[row * label.stride + $0] < 128 }
        )
        let cut = last + 1 + 3 * 2
        let width = label.width + 40
        var pixels = [UInt8](repeating: 60, count: width * label.height)
        for y in 0..<label.height {
            for x in 0..<cut { pixels[y * width + x] = label.pixels[y * label.stride + x] }
        }
        let image = try ImageBuffer(
            width: width,
            height: label.height,
            format: .grey,
            pixels: pixels
        )
        let zbar = ZBarEngine.read(image, symbologies: [.upcE])
        #expect(zbar.map(\.text) == ["0012345000065"])
    }
}
