import Foundation
import Scanner
import Testing

/// Codes generated at test time with qrencode, zint and dmtxwrite, then read back.
@Suite("Round trips")
struct RoundTripTests {
    static let reader = BarcodeReader(options: .standard)
    static let thorough = BarcodeReader(options: .thorough)

    static func read(_ png: Data, reader: BarcodeReader = reader) throws -> [Barcode] {
        try reader.scan(data: png, name: "generated.png")
    }

    @Test("QR codes from qrencode: UTF-8, Shift-JIS kanji mode and raw binary")
    func qrencodePayloads() throws {
        let utf8 = "Grüße aus Köln — 東京 🚀"
        let codes = try Self.read(Fixtures.qrencode(utf8))
        #expect(codes.map(\.text) == [utf8])
        #expect(codes.first?.symbology == .qrCode)
        #expect(codes.first?.bytes == Data(utf8.utf8))

        let kanji = "日本語の漢字"
        let sjis = try #require(kanji.data(using: .shiftJIS))
        let kanjiCodes = try Self.read(Fixtures.qrencode(bytes: sjis, extra: ["-k"]))
        #expect(kanjiCodes.map(\.text) == [kanji])

        var generator = SeededGenerator(seed: 42)
        let binary = Data((0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let binaryCodes = try Self.read(Fixtures.qrencode(bytes: binary, extra: ["-8"]))
        #expect(binaryCodes.first?.bytes == binary)
    }

    @Test(
        "linear and stacked codes from zint",
        arguments: [
            ("EANX", "590123412345", Symbology.ean13, "5901234123457"),
            ("EANX", "1234567", .ean8, "12345670"),
            ("UPCA", "03600029145", .upcA, "0036000291452"),
            ("UPCE", "0123456", .upcE, "0012345000065"),
            ("CODE128", "Shopfloor-128", .code128, "Shopfloor-128"),
            ("CODE39", "SHOPFLOOR 39", .code39, "SHOPFLOOR 39"),
            ("CODE93", "SHOP93", .code93, "SHOP93"),
            ("C25INTER", "12345678", .itf, "12345678"),
            ("CODABAR", "A40156B", .codabar, "A40156B"),
            ("PDF417", "PDF417 at the till", .pdf417, "PDF417 at the till"),
            ("QRCODE", "zint QR", .qrCode, "zint QR"),
            ("DATAMATRIX", "zint DataMatrix", .dataMatrix, "zint DataMatrix"),
        ]
    )
    func zintCodes(type: String, data: String, symbology: Symbology, text: String) throws {
        let codes = try Self.read(Fixtures.zint(type, data, extra: ["--scale=2"]))
        let code = try #require(codes.first, "nothing read from zint \(type)")
        #expect(code.symbology == symbology)
        #expect(code.text == text)
        #expect(codes.count == 1)
    }

    @Test("GS1 payloads carry the GS1 flag, AIM identifier and GS separators")
    func gs1() throws {
        let c128 = try #require(
            try Self.read(
                Fixtures.zint(
                    "GS1_128",
                    "[01]09501101530003[10]ABC123[17]250101",
                    extra: ["--scale=2"]
                )
            ).first
        )
        #expect(c128.isGS1)
        #expect(c128.symbologyIdentifier == "]C1")
        #expect(c128.text == "0109501101530003" + "10ABC123\u{1D}" + "17250101")

        let dm = try #require(
            try Self.read(
                Fixtures.zint(
                    "DATAMATRIX",
                    "[01]09501101530003[21]XYZ",
                    extra: ["--gs1", "--scale=4"]
                )
            ).first
        )
        #expect(dm.symbology == .dataMatrix)
        #expect(dm.isGS1 && dm.symbologyIdentifier == "]d2")
        #expect(dm.text == "010950110153000321XYZ")
    }

    @Test("an ECI designation selects the character set (ISO-8859-5 Cyrillic)")
    func eci() throws {
        let text = "Привет, склад"
        let code = try #require(
            try Self.read(Fixtures.zint("QRCODE", text, extra: ["--eci=7", "--scale=4"])).first
        )
        #expect(code.text == text)
    }

    @Test("DataMatrix from dmtxwrite: text, Base 256 binary, and a rectangle")
    func dmtxwrite() throws {
        let text = try #require(
            try Self.read(Fixtures.dmtxwrite(Data("Shelf A-12 / bin 7".utf8))).first
        )
        #expect(text.symbology == .dataMatrix && text.text == "Shelf A-12 / bin 7")

        let binary = Data((0..<64).map { UInt8(($0 * 37 + 11) % 256) })
        let b256 = try #require(
            try Self.read(Fixtures.dmtxwrite(binary, extra: ["-e", "8"])).first
        )
        #expect(b256.bytes == binary)

        let rect = try #require(
            try Self.read(Fixtures.dmtxwrite(Data("RECT".utf8), extra: ["-s", "r"])).first
        )
        #expect(rect.text == "RECT")
    }

    @Test(
        "rotated codes: right angles at balanced effort, 30 degrees when thorough",
        arguments: [90, 180, 270]
    )
    func rightAngles(degrees: Int) throws {
        let png = try Fixtures.convert(
            Fixtures.zint("CODE128", "ROTATED-\(degrees)", extra: ["--scale=2"]),
            to: "png",
            options: ["-rotate", "\(degrees)"]
        )
        #expect(try Self.read(png).map(\.text) == ["ROTATED-\(degrees)"])
    }

    @Test("a Code 128 at 30 degrees is found by the thorough rotation pass")
    func thirtyDegrees() throws {
        let png = try Fixtures.convert(
            Fixtures.zint("CODE128", "TILTED", extra: ["--scale=3"]),
            to: "png",
            options: ["-background", "white", "-rotate", "30"]
        )
        #expect(try Self.read(png, reader: Self.thorough).map(\.text) == ["TILTED"])
    }

    @Test("inverted (light on dark) QR and EAN-13 codes")
    func inverted() throws {
        let qr = try Fixtures.convert(
            Fixtures.qrencode("inverted QR", extra: ["-s", "6"]),
            to: "png",
            options: ["-negate"]
        )
        #expect(try Self.read(qr).map(\.text) == ["inverted QR"])
        let ean = try Fixtures.convert(
            Fixtures.zint("EANX", "590123412345", extra: ["--scale=2"]),
            to: "png",
            options: ["-negate"]
        )
        #expect(try Self.read(ean).map(\.text) == ["5901234123457"])
    }

    @Test("a tiny QR with one-pixel modules and a huge one with forty-pixel modules")
    func tinyAndHuge() throws {
        let tiny = try Fixtures.qrencode("tiny", extra: ["-s", "1", "-m", "4"])
        #expect(try Self.read(tiny).map(\.text) == ["tiny"])
        let long = String(repeating: "Shopfloor huge QR payload. ", count: 20)
        let huge = try Fixtures.qrencode(long, extra: ["-s", "40"])
        let image = try ImageBuffer(data: huge)
        #expect(image.width > 3000)
        #expect(try Self.read(huge).map(\.text) == [long])
    }

    @Test("several codes in one image are all reported once, in reading order, and the limit holds")
    func severalCodes() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var paths: [String] = []
        for (i, text) in ["first", "second", "third"].enumerated() {
            let url = dir.appendingPathComponent("\(i).png")
            try Fixtures.qrencode(text, extra: ["-s", "5"]).write(to: url)
            paths.append(url.path)
        }
        let joined = try Fixtures.run("convert", paths + ["+append", "png:-"])
        #expect(try Self.read(joined).map(\.text) == ["first", "second", "third"])
        let one = BarcodeReader(options: BarcodeScanOptions(maximumSymbols: 1))
        #expect(try one.scan(data: joined).count == 1)
    }

    @Test("the region of interest limits the search; points stay in image coordinates")
    func regionOfInterest() throws {
        let png = try Fixtures.qrencode("roi", extra: ["-s", "4"])
        let padded = try Fixtures.convert(
            png,
            to: "png",
            options: ["-gravity", "southeast", "-background", "white", "-extent", "400x400"]
        )
        let image = try ImageBuffer(data: padded)
        let all = BarcodeReader().scan(image)
        let code = try #require(all.first)
        let box = code.boundingBox
        #expect(box.x > 200 && box.y > 200, "\(box)")

        let inside = BarcodeReader(
            options: BarcodeScanOptions(
                regionOfInterest: PixelRect(x: 200, y: 200, width: 200, height: 200)
            )
        )
        let found = try #require(inside.scan(image).first)
        #expect(abs(found.boundingBox.x - box.x) <= 2 && abs(found.boundingBox.y - box.y) <= 2)

        let outside = BarcodeReader(
            options: BarcodeScanOptions(
                regionOfInterest: PixelRect(x: 0, y: 0, width: 150, height: 150)
            )
        )
        #expect(outside.scan(image).isEmpty)
    }

    @Test("symbologies not asked for are not reported")
    func symbologyFilter() throws {
        let ean = try Fixtures.zint("EANX", "590123412345", extra: ["--scale=2"])
        let qrOnly = BarcodeReader(options: BarcodeScanOptions(symbologies: [.qrCode]))
        #expect(try qrOnly.scan(data: ean).isEmpty)
        let retail = BarcodeReader(options: .retail)
        #expect(try retail.scan(data: ean).map(\.symbology) == [.ean13])
    }

    @Test("options survive a JSON round trip")
    func optionsCodable() throws {
        let options = BarcodeScanOptions(
            symbologies: [.qrCode, .ean13],
            regionOfInterest: PixelRect(x: 1, y: 2, width: 3, height: 4),
            effort: .thorough,
            searchesRotations: false,
            searchesInverted: true,
            maximumSymbols: 2
        )
        let decoded = try JSONDecoder().decode(
            BarcodeScanOptions.self,
            from: JSONEncoder().encode(options)
        )
        #expect(decoded == options)
    }
}

/// A small deterministic generator (SplitMix64) so fuzz inputs repeat run to run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
