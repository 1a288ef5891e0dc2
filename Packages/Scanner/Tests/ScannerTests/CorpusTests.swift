import Foundation
import Scanner
import Testing

/// The dev corpus (`$SHOPFLOOR_CORPUS/barcodes`): FAMILY-N/NAME.{png,jpg,webp} with
/// NAME.txt (expected text) or NAME.bin (expected bytes); falsepositives-1 has no codes.
enum Corpus {
    struct Item: Sendable, CustomTestStringConvertible {
        var image: URL
        var expectedText: String?
        var expectedBytes: Data?
        var testDescription: String {
            image.deletingLastPathComponent().lastPathComponent + "/" + image.lastPathComponent
        }
    }

    static let imageExtensions: Set<String> = [
        "png", "jpg", "jpeg", "webp", "gif", "tif", "tiff", "bmp", "pgm", "ppm",
    ]

    static func images(in folder: String? = nil) -> [URL] {
        images(under: Fixtures.corpus, in: folder)
    }

    /// The images of a corpus-like tree (FAMILY/NAME.ext), families in order.
    static func images(under root: URL, in folder: String? = nil) -> [URL] {
        guard let families = try? FileManager.default.contentsOfDirectory(atPath: root.path) else {
            return []
        }
        return families.sorted().filter { folder == nil || $0 == folder }.flatMap {
            family -> [URL] in
            let dir = root.appendingPathComponent(family)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            return names.sorted().map { dir.appendingPathComponent($0) }
                .filter { imageExtensions.contains($0.pathExtension.lowercased()) }
        }
    }

    /// Every image with an expected .txt or .bin.
    static let expected: [Item] = images().compactMap(item(for:))

    /// The image with its expected NAME.txt or NAME.bin beside it, or nil without either.
    static func item(for url: URL) -> Item? {
        let base = url.deletingPathExtension()
        let text = try? String(contentsOf: base.appendingPathExtension("txt"), encoding: .utf8)
        let bytes = try? Data(contentsOf: base.appendingPathExtension("bin"))
        guard text != nil || bytes != nil else { return nil }
        return Item(image: url, expectedText: text, expectedBytes: bytes)
    }

    static let falsePositives: [URL] = images(in: "falsepositives-1")

    /// Scans a set laid out as the corpus (FAMILY/NAME.ext beside NAME.txt or NAME.bin):
    /// the images whose payload was read, those with a payload, and every reading of a
    /// falsepositives-* image.
    static func score(under root: URL, with reader: BarcodeReader) async -> (
        read: Int, expected: Int, falsePositives: [String]
    ) {
        let images = images(under: root)
        var read = 0
        var expected = 0
        var falsePositives: [String] = []
        for await result in reader.scan(files: images, jobs: 2) {
            let url = images[result.index]
            if url.deletingLastPathComponent().lastPathComponent.hasPrefix("falsepositives") {
                falsePositives += result.barcodes.map { "\(url.lastPathComponent): \($0.text)" }
                continue
            }
            guard let item = item(for: url) else { continue }
            expected += 1
            if matches(item, result.barcodes) { read += 1 }
        }
        return (read, expected, falsePositives)
    }

    static func matches(_ item: Item, _ codes: [Barcode]) -> Bool {
        codes.contains { code in
            if let bytes = item.expectedBytes { return code.bytes == bytes }
            return code.text == item.expectedText
        }
    }
}

@Suite("Dev corpus")
struct CorpusTests {
    static let reader = BarcodeReader(options: .standard)

    @Test("the corpus is where SHOPFLOOR_CORPUS (or ../shared/corpus) says")
    func corpusPresent() {
        #expect(Corpus.expected.count >= 136, "corpus at \(Fixtures.corpus.path)")
        #expect(Corpus.falsePositives.count >= 20)
    }

    /// Images not read at balanced effort: a blurred EAN-13 photo, a QR whose modules are
    /// photo-textured (thorough effort reads it), and a QR nested in another (the outer one is read).
    static let knownMisses: Set<String> = [
        "ean13-1/36.webp", "qrcode-2/13.webp", "qrcode-2/16.webp",
    ]

    @Test("thorough effort reads the photo-textured QR that balanced misses")
    func thoroughReadsMore() throws {
        let url = Fixtures.corpus.appendingPathComponent("qrcode-2/13.webp")
        let item = try #require(Corpus.expected.first { $0.image == url })
        #expect(Corpus.matches(item, try BarcodeReader(options: .thorough).scan(contentsOf: url)))
    }

    @Test("every readable expected image decodes to its .txt or .bin, and at least 130 do")
    func hits() throws {
        var misses: [String] = []
        for item in Corpus.expected {
            let codes = try Self.reader.scan(contentsOf: item.image)
            if !Corpus.matches(item, codes) {
                misses.append(item.testDescription)
                if !Self.knownMisses.contains(item.testDescription) {
                    Issue.record(
                        "\(item.testDescription): got \(codes.map { "\($0.symbology.rawValue):\($0.text.prefix(40))" })"
                    )
                }
            }
        }
        let hits = Corpus.expected.count - misses.count
        #expect(hits >= 130, "\(hits)/\(Corpus.expected.count); misses: \(misses)")
    }

    @Test("the two .bin-only images decode to their exact bytes")
    func binaryPayloads() throws {
        let binaries = Corpus.expected.filter { $0.expectedBytes != nil && $0.expectedText == nil }
        #expect(binaries.count == 2)
        for item in binaries {
            let codes = try Self.reader.scan(contentsOf: item.image)
            #expect(codes.contains { $0.bytes == item.expectedBytes }, "\(item.testDescription)")
        }
    }

    @Test("UPC-A reads as UPCA with 13 digits and ]E0; GS1 Code 128 carries ]C1 and the flag")
    func upcAndGS1() throws {
        let upc = try Self.reader.scan(
            contentsOf: Fixtures.corpus.appendingPathComponent("upca-1/2.webp")
        )
        let code = try #require(upc.first)
        #expect(code.symbology == .upcA)
        #expect(code.text == "0036602301467")
        #expect(code.symbologyIdentifier == "]E0")
        let gs1 = try Self.reader.scan(
            contentsOf: Fixtures.corpus.appendingPathComponent("code128-1/1.png")
        )
        let c128 = try #require(gs1.first)
        #expect(c128.symbology == .code128 && c128.isGS1 && c128.symbologyIdentifier == "]C1")
        #expect(c128.text == "168901")
    }

    @Test("no symbol is reported on the false-positive images")
    func falsePositives() throws {
        for url in Corpus.falsePositives {
            let codes = try Self.reader.scan(contentsOf: url)
            #expect(
                codes.isEmpty,
                "\(url.lastPathComponent): \(codes.map { "\($0.symbology.rawValue):\($0.text)" })"
            )
        }
    }
}
