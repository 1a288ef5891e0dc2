import Foundation
import Scanner
import Testing

@Suite("ImageBuffer")
struct ImageBufferTests {
    @Test("raw RGB pixels give a grey view with BT.601 luminance")
    func rawPixelsGreyView() throws {
        let image = try ImageBuffer(
            width: 2,
            height: 1,
            format: .rgb,
            pixels: [255, 255, 255, 255, 0, 0]
        )
        let grey = image.greyscale()
        #expect(grey.format == .grey)
        #expect(grey.width == 2 && grey.height == 1)
        #expect(grey.pixels[0] >= 254)
        #expect(grey.pixels[1] == 76)
    }

    @Test("transparent RGBA pixels read as white in the grey view")
    func transparentIsWhite() throws {
        let image = try ImageBuffer(width: 1, height: 1, format: .rgba, pixels: [0, 0, 0, 0])
        #expect(image.greyscale().pixels == [255])
    }

    @Test("a stride wider than the row is honoured")
    func stride() throws {
        let image = try ImageBuffer(
            width: 2,
            height: 2,
            format: .grey,
            stride: 4,
            pixels: [1, 2, 9, 9, 3, 4, 9, 9]
        )
        #expect(image.luminance(x: 1, y: 1) == 4)
        let crop = try #require(image.cropped(to: PixelRect(x: 1, y: 0, width: 5, height: 5)))
        #expect(crop.pixels == [2, 4])
    }

    @Test("pixels that do not fill the sizes given are a typed error")
    func shortPixels() {
        #expect(throws: ImageError.self) {
            try ImageBuffer(width: 10, height: 10, format: .rgb, pixels: [0, 0, 0])
        }
    }

    @Test(
        "empty, text and truncated inputs are typed errors",
        arguments: [
            (Data(), ImageError.Code.empty),
            (Data("hello, not an image\n".utf8), .notAnImage),
            (Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0]), .truncated),
        ]
    )
    func badData(data: Data, code: ImageError.Code) {
        #expect {
            try ImageBuffer(data: data, name: "input.png")
        } throws: { error in
            (error as? ImageError)?.code == code && (error as? ImageError)?.input == "input.png"
        }
    }

    @Test("a 60000 x 60000 PNG header is refused before decoding")
    func hugeHeader() throws {
        let png = Fixtures.pngHeader(width: 60000, height: 60000)
        #expect(try ImageBuffer.dimensions(of: png) == (60000, 60000))
        #expect {
            try ImageBuffer(data: png, name: "huge.png")
        } throws: { error in
            (error as? ImageError)?.code == .tooLarge
        }
    }

    @Test("a PNG cut anywhere is a typed error, never a crash")
    func truncatedEverywhere() throws {
        let png = try Fixtures.qrencode("truncate me", extra: ["-s", "4"])
        let image = try ImageBuffer(data: png)
        // qrencode writes a 1-bit palette PNG, black on white, with a tRNS chunk (both colours
        // opaque): decoded to RGBA, every byte 0 or 255.
        #expect(image.format == .rgba)
        #expect(Set(image.pixels) == [0, 255])
        // Every cut before the IEND chunk (its 12 bytes carry no pixels) loses pixel data.
        for cut in Swift.stride(from: 1, to: png.count - 12, by: max(1, png.count / 97)) {
            #expect(throws: ImageError.self) { try ImageBuffer(data: png.prefix(cut)) }
        }
    }

    @Test("a directory and a missing file are unreadable")
    func directoryAndMissing() {
        let dir = FileManager.default.temporaryDirectory
        #expect { try ImageBuffer(contentsOf: dir) } throws: {
            ($0 as? ImageError)?.code == .unreadable
        }
        let missing = dir.appendingPathComponent("no-such-\(UUID().uuidString).png")
        #expect { try ImageBuffer(contentsOf: missing) } throws: {
            ($0 as? ImageError)?.code == .unreadable
        }
    }

    @Test(
        "JPEG, WebP, TIFF, GIF, PNM and BMP decode through leptonica",
        arguments: [
            "jpg", "webp", "tif", "gif", "pgm", "ppm", "bmp", "bmp3",
        ]
    )
    func otherFormats(ext: String) throws {
        let png = try Fixtures.qrencode("format \(ext)", extra: ["-s", "6"])
        let converted = try Fixtures.convert(png, to: ext)
        let image = try ImageBuffer(data: converted, name: "code.\(ext)")
        let original = try ImageBuffer(data: png)
        #expect(image.width == original.width && image.height == original.height)
    }
}
