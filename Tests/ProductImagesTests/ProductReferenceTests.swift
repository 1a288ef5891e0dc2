import Foundation
import ImageCache
import Models
import ProductImages
import SuiteClient
import Testing

@Suite("Naming products and mapping image failures")
struct ProductReferenceTests {
    @Test(
        "Every GTIN form a person types names the same product",
        arguments: [
            "4006381333931", "04006381333931", " 4006381333931 ", "4 006381 333931",
            "400-6381-333931", "4006381.333931", "(01)04006381333931",
            "(01)04006381333931(10)LOT-7(17)291231", "0104006381333931\u{1D}10LOT7",
            "]d20104006381333931", "https://id.gs1.org/01/04006381333931",
            "https://example.com/shop/gtin/04006381333931/lot/A1?17=291231",
        ]
    )
    func forms(text: String) throws {
        #expect(try ProductReference.gtin(parsing: text).gtin14 == "04006381333931")
    }

    @Test("Shorter GTINs keep their length")
    func shortForms() throws {
        #expect(try ProductReference.gtin(parsing: "96385074").description == "96385074")
        #expect(try ProductReference.gtin(parsing: "0-12345-67890-5").description == "012345678905")
    }

    @Test(
        "Malformed input is invalidInput (exit 64) naming the text and the problem",
        arguments: [
            ("123", "'123' is not a GTIN"), ("4006381333932", "check digit 2, expected 1"),
            ("", "no GTIN given"), ("pencil", "'pencil' is neither a GTIN"),
            ("(10)LOT7", "without a GTIN (01)"),
            ("(01)4006381333932", "(01) 4006381333932 has check digit 2"),
            ("https://example.com/nothing", "primary key"),
            ("40063813339310000000000", "is not a GTIN"),
        ]
    )
    func malformed(text: String, message: String) {
        #expect {
            try ProductReference.gtin(parsing: text)
        } throws: { error in
            guard let error = error as? SuiteClientError else { return false }
            return error.code == .invalidInput && error.exitCode == 64
                && error.message.contains(message)
        }
    }

    @Test(
        "A barcode's GTIN comes from its symbology and text",
        arguments: [
            ("EAN13", "4006381333931", false, "04006381333931"),
            ("UPCA", "0614141000036", false, "00614141000036"),
            ("UPCE", "0012345000065", false, "00012345000065"),
            ("EAN8", "96385074", false, "00000096385074"),
            ("ITF", "14006381333938", false, "14006381333938"),
            ("DataMatrix", "0104006381333931\u{1D}10LOT7", true, "04006381333931"),
            ("DataBar", "0104006381333931", false, "04006381333931"),
            ("QRCode", "https://id.gs1.org/01/04006381333931", false, "04006381333931"),
            ("Code128", "4006381333931", false, "04006381333931"),
        ]
    )
    func symbols(format: String, text: String, gs1: Bool, expected: String) {
        #expect(
            ProductReference.gtin(inSymbol: text, format: format, isGS1: gs1)?.gtin14 == expected
        )
    }

    @Test(
        "Symbols without a GTIN give none",
        arguments: [
            ("QRCode", "hello shop", false), ("EAN13", "4006381333932", false),
            ("ITF", "123456", false), ("DataMatrix", "10LOT7", true),
            ("QRCode", "shopfloor://reservations/41SJ3EQ4", false),
        ]
    )
    func noGTIN(format: String, text: String, gs1: Bool) {
        #expect(ProductReference.gtin(inSymbol: text, format: format, isGS1: gs1) == nil)
    }

    @Test("An offline search matches title, brand, SKU and GTIN, case-blind")
    func offlineMatching() throws {
        let product = try Product(
            gtin: GTIN("4006381333931"),
            sku: "SKU-00042",
            title: "Graphite Pencil",
            brand: "Faber",
            price: Money(minorUnits: 120, currency: .eur)
        )
        for text in ["pencil", "GRAPH", "faber", "sku-000", "0400638", "  pencil "] {
            #expect(ProductQuery(text: text).matches(product), "\(text)")
        }
        #expect(!ProductQuery(text: "eraser").matches(product))
        #expect(ProductQuery(text: nil).matches(product))
    }

    @Test(
        "Image failures map to the suite's exit codes",
        arguments: [
            (ImageCacheError(code: .httpStatus, message: "x", status: 404), Int32(3)),
            (ImageCacheError(code: .httpStatus, message: "x", status: 401), 77),
            (ImageCacheError(code: .httpStatus, message: "x", status: 400), 64),
            (ImageCacheError(code: .httpStatus, message: "x", status: 503), 6),
            (ImageCacheError(code: .httpStatus, message: "x", status: 500), 1),
            (ImageCacheError(code: .transportFailed, message: "x"), 6),
            (
                ImageCacheError(
                    code: .transportFailed,
                    message: "x",
                    cause: SuiteClientError(.signInRequired, "sign-in required")
                ), 77
            ),
            (
                ImageCacheError(
                    code: .transportFailed,
                    message: "x",
                    cause: SuiteClientError(.offline, "refused")
                ), 6
            ),
            (ImageCacheError(code: .notCached, message: "x"), 6),
            (ImageCacheError(code: .decodingFailed, message: "x"), 1),
            (ImageCacheError(code: .ioFailure, message: "x"), 1),
            (ImageCacheError(code: .cancelled, message: "x"), 130),
        ] as [(ImageCacheError, Int32)]
    )
    func errorMapping(error: ImageCacheError, exitCode: Int32) {
        let mapped = ProductImageCache.map(error, what: "the image of product 4006381333931")
        #expect(mapped.exitCode == exitCode, "\(error.code) \(error.status ?? 0) → \(mapped.code)")
    }

    @Test("Offline with nothing kept names what is missing")
    func offlineMessage() {
        let mapped = ProductImageCache.map(
            ImageCacheError(
                code: .transportFailed,
                message: "cannot load",
                cause: SuiteClientError(
                    .offline,
                    "the server at http://x cannot be reached (refused)"
                )
            ),
            what: "the image of product 4006381333931"
        )
        #expect(
            mapped.message
                == "offline: the server at http://x cannot be reached (refused); no copy of the image of product 4006381333931 was kept"
        )
    }
}
