import ChildProcesses
import Foundation
import PNG
import Testing

/// 3×2 pixels: red, green, blue / white, black, grey at half coverage.
let samplePixels: [UInt8] = [
    255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255,
    255, 255, 255, 255, 0, 0, 0, 255, 128, 128, 128, 128,
]

/// `pixels` (RGBA, `width` wide) written as a PNG by ImageMagick with `options`.
func makePNG(_ pixels: [UInt8], width: Int, height: Int, options: [String]) async throws -> Data {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("png-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let raw = directory.appendingPathComponent("in.raw")
    try Data(pixels).write(to: raw)
    let out = directory.appendingPathComponent("out.png")
    let outcome = try await ChildProcess.run(
        URL(fileURLWithPath: "/usr/bin/env"),
        ["convert", "-size", "\(width)x\(height)", "-depth", "8", "rgba:\(raw.path)", "-strip"]
            + options + [out.path]
    )
    try #require(outcome.status == 0, "convert \(options) failed: \(outcome)")
    return try Data(contentsOf: out)
}

/// A PNG signature and an IHDR chunk (with its CRC) claiming `width` × `height`, and no data.
func pngHeader(width: UInt32, height: UInt32) -> Data {
    var chunk: [UInt8] = Array("IHDR".utf8)
    for value in [width, height] {
        chunk += [
            UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF),
            UInt8(value & 0xFF),
        ]
    }
    chunk += [8, 6, 0, 0, 0]
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in chunk {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    crc ^= 0xFFFF_FFFF
    var data: [UInt8] = [137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13] + chunk
    data += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    // An empty IDAT (libpng reads the header up to the first one) and IEND, with CRCs.
    data += [0, 0, 0, 0] + Array("IDAT".utf8) + [0x35, 0xAF, 0x06, 0x1E]
    data += [0, 0, 0, 0] + Array("IEND".utf8) + [0xAE, 0x42, 0x60, 0x82]
    return Data(data)
}

@Suite("Decoding PNGs with libpng")
struct PNGImageTests {
    @Test("8-bit RGBA decodes to exactly its pixels")
    func rgba() async throws {
        let decoded = try PNGImage(
            decoding: try await makePNG(
                samplePixels,
                width: 3,
                height: 2,
                options: ["-define", "png:color-type=6"]
            ),
            name: "sample.png"
        )
        #expect(decoded.width == 3 && decoded.height == 2)
        #expect(decoded.rgba == samplePixels)
    }

    @Test("16-bit RGBA is reduced to 8 bits (linear, as libpng reads 16-bit without gAMA)")
    func sixteenBit() async throws {
        let decoded = try PNGImage(
            decoding: try await makePNG(
                samplePixels,
                width: 3,
                height: 2,
                options: [
                    "-depth", "16", "-define", "png:bit-depth=16", "-define", "png:color-type=6",
                ]
            ),
            name: "deep.png"
        )
        #expect(decoded.width == 3 && decoded.height == 2)
        #expect(Array(decoded.rgba.prefix(20)) == Array(samplePixels.prefix(20)))
        let (r, g, b, a) = decoded.pixel(x: 2, y: 1)
        #expect(a == 128)
        #expect(r == g && g == b && (180...190).contains(r), "linear 0.5 is sRGB ~187, got \(r)")
    }

    @Test("RGB without alpha is opaque; palette and grey images expand to RGBA")
    func otherTypes() async throws {
        let opaque = samplePixels.enumerated().map { $0.offset % 4 == 3 ? 255 : $0.element }
        let rgb = try PNGImage(
            decoding: try await makePNG(
                opaque,
                width: 3,
                height: 2,
                options: ["-define", "png:color-type=2"]
            ),
            name: "rgb.png"
        )
        #expect(rgb.rgba == opaque)
        let palette = try PNGImage(
            decoding: try await makePNG(
                opaque,
                width: 3,
                height: 2,
                options: ["-type", "Palette", "-define", "png:color-type=3"]
            ),
            name: "palette.png"
        )
        #expect(palette.rgba == opaque)
        let greys: [UInt8] = [0, 0, 0, 255, 90, 90, 90, 255, 255, 255, 255, 0]
        let grey = try PNGImage(
            decoding: try await makePNG(
                greys,
                width: 3,
                height: 1,
                options: ["-define", "png:color-type=4"]
            ),
            name: "grey.png"
        )
        #expect(grey.pixel(x: 1, y: 0) == (90, 90, 90, 255))
        #expect(grey.pixel(x: 2, y: 0).3 == 0)
    }

    @Test("Cut-short, damaged and foreign bytes are refused with the input's name")
    func damaged() async throws {
        let good = try await makePNG(samplePixels, width: 3, height: 2, options: [])
        for (bytes, reason) in [
            (good.prefix(good.count / 2), "not a readable PNG"),
            (good.prefix(30), "not a readable PNG"),
            (Data("GIF89a not a png".utf8), "not a PNG image"),
            (Data(), "not a PNG image"),
        ] {
            #expect {
                try PNGImage(decoding: Data(bytes), name: "http://server/image")
            } throws: { error in
                let message = (error as? PNGImage.DecodingError)?.message ?? ""
                return message.contains("http://server/image") && message.contains(reason)
            }
        }
        var flipped = good
        flipped[flipped.count - 20] ^= 0xFF
        #expect(throws: PNGImage.DecodingError.self) {
            try PNGImage(decoding: flipped, name: "flipped")
        }
    }

    @Test("A header claiming a huge image is refused before any pixel is decoded")
    func huge() {
        #expect {
            try PNGImage(decoding: pngHeader(width: 100_000, height: 100_000), name: "bomb.png")
        } throws: { error in
            (error as? PNGImage.DecodingError)?.message.contains("bomb.png is 100000×100000 pixels")
                ?? false
        }
    }

    @Test(
        "Encoded grey, grey + alpha, RGB and RGBA decode back to the same pixels",
        arguments: [1, 2, 3, 4]
    )
    func roundTrip(channels: Int) throws {
        let width = 5
        let height = 3
        let pixels = (0..<(width * height * channels)).map { UInt8(truncatingIfNeeded: $0 * 37) }
        let png = try PNGEncoder.encode(
            width: width,
            height: height,
            channels: channels,
            pixels: pixels
        )
        let decoded = try PNGImage(decoding: png, name: "round trip")
        #expect(decoded.width == width && decoded.height == height)
        for index in 0..<(width * height) {
            let source = Array(pixels[(index * channels)..<((index + 1) * channels)])
            let (red, green, blue, alpha) = decoded.pixel(x: index % width, y: index / width)
            switch channels {
            case 1, 2:
                #expect([red, green, blue] == [source[0], source[0], source[0]])
            default:
                #expect([red, green, blue] == Array(source[0..<3]))
            }
            #expect(alpha == (channels == 2 ? source[1] : channels == 4 ? source[3] : 255))
        }
    }

    @Test("The encoder refuses sizes, channel counts and buffers that do not fit")
    func encoderRefusals() {
        let cases: [(Int, Int, Int, Int, String)] = [
            (0, 1, 3, 0, "outside 1…16384"),
            (16_385, 1, 1, 16_385, "outside 1…16384"),
            (2, 2, 5, 20, "5 channels"),
            (2, 2, 3, 11, "11 bytes given"),
        ]
        for (width, height, channels, count, message) in cases {
            #expect {
                try PNGEncoder.encode(
                    width: width,
                    height: height,
                    channels: channels,
                    pixels: [UInt8](repeating: 0, count: count)
                )
            } throws: { error in
                (error as? PNGEncodingError)?.message.contains(message) ?? false
            }
        }
    }
}
