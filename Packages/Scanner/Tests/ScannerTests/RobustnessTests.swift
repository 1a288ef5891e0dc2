import Foundation
import Scanner
import Testing

@Suite("Robustness and concurrency")
struct RobustnessTests {
    @Test(
        "fuzzed PNG, JPEG and WebP buffers give a result or a typed error, never a crash",
        arguments: ["png", "jpg", "webp"]
    )
    func fuzzedBuffers(ext: String) throws {
        let png = try Fixtures.qrencode("fuzz me \(ext)", extra: ["-s", "3"])
        let original = ext == "png" ? png : try Fixtures.convert(png, to: ext)
        var generator = SeededGenerator(seed: UInt64(ext.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        let reader = BarcodeReader(options: .fast)
        var decoded = 0
        var refused = 0
        for _ in 0..<150 {
            var bytes = [UInt8](original)
            let flips = Int.random(in: 1...12, using: &generator)
            for _ in 0..<flips {
                // Mostly past the signature, so decoders get far enough to meet the damage.
                let at = Int.random(in: min(8, bytes.count - 1)..<bytes.count, using: &generator)
                bytes[at] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                bytes.removeLast(Int.random(in: 0..<bytes.count / 2, using: &generator))
            }
            do {
                _ = try reader.scan(data: Data(bytes), name: "fuzzed.\(ext)")
                decoded += 1
            } catch {
                // An ImageError (typed throws) naming the input, as the caller named it.
                #expect(error.input == "fuzzed.\(ext)")
                refused += 1
            }
        }
        // The damage reached the decoders: some buffers were refused, the rest gave a result.
        #expect(refused > 0, "decoded \(decoded), refused \(refused)")
    }

    @Test("random pixels of odd sizes scan without trouble")
    func randomPixels() throws {
        var generator = SeededGenerator(seed: 7)
        let reader = BarcodeReader(options: .thorough)
        for (w, h) in [(1, 1), (1, 100), (100, 1), (3, 3), (97, 61)] {
            let pixels = (0..<(w * h * 3)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let image = try ImageBuffer(width: w, height: h, format: .rgb, pixels: pixels)
            #expect(reader.scan(image).isEmpty)
        }
    }

    @Test("one reader scanning from eight tasks at once gives the same results as one at a time")
    func concurrentScans() async throws {
        let images = try [
            ImageBuffer(data: Fixtures.qrencode("parallel one", extra: ["-s", "4"])),
            ImageBuffer(data: Fixtures.zint("CODE128", "PARALLEL-2", extra: ["--scale=2"])),
            ImageBuffer(data: Fixtures.dmtxwrite(Data("parallel three".utf8))),
        ]
        let reader = BarcodeReader()
        let expected = images.map { reader.scan($0).map(\.text) }
        #expect(expected == [["parallel one"], ["PARALLEL-2"], ["parallel three"]])
        let results = await withTaskGroup(of: (Int, [String]).self) { group in
            for i in 0..<24 {
                group.addTask { (i % 3, reader.scan(images[i % 3]).map(\.text)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 24)
        for (index, texts) in results { #expect(texts == expected[index]) }
    }

    @Test("the batch API returns every input in order, with typed errors for bad ones")
    func batchInOrder() async throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var inputs: [ScanInput] = []
        for i in 0..<12 {
            let url = dir.appendingPathComponent("\(i).png")
            try Fixtures.qrencode("batch \(i)", extra: ["-s", "3"]).write(to: url)
            inputs.append(.file(url))
        }
        let empty = dir.appendingPathComponent("empty.png")
        try Data().write(to: empty)
        inputs.insert(.file(empty), at: 5)
        inputs.insert(.file(dir), at: 2)
        inputs.append(ScanInput(name: "-", source: .data(Data("not an image".utf8))))

        var results: [BarcodeScanResult] = []
        for await result in BarcodeReader().scan(inputs, jobs: 3) { results.append(result) }
        #expect(results.map(\.index) == Array(0..<inputs.count))
        #expect(results.map(\.name) == inputs.map(\.name))
        #expect(results[2].error?.code == .unreadable)
        #expect(results[6].error?.code == .empty)
        #expect(results.last?.error?.code == .notAnImage)
        let texts = results.compactMap { $0.barcodes.first?.text }
        #expect(texts == (0..<12).map { "batch \($0)" })
    }

    @Test("leaving a batch early stops it without waiting for every input")
    func batchCancellation() async throws {
        let png = try Fixtures.qrencode("early", extra: ["-s", "3"])
        let inputs = (0..<200).map { ScanInput(name: "\($0)", source: .data(png)) }
        var seen = 0
        for await _ in BarcodeReader().scan(inputs, jobs: 2) {
            seen += 1
            if seen == 3 { break }
        }
        #expect(seen == 3)
    }

    @Test("corrupt pixels handed in directly never reach the engines unchecked")
    func directPixelsChecked() {
        #expect(throws: ImageError.self) {
            try ImageBuffer(width: 0, height: 5, format: .grey, pixels: [])
        }
        #expect(throws: ImageError.self) {
            try ImageBuffer(
                width: 4,
                height: 4,
                format: .grey,
                stride: 2,
                pixels: [UInt8](repeating: 0, count: 16)
            )
        }
    }

    @Test(
        "an image announcing more pixels than the limit is refused, in every format",
        arguments: [
            "png", "jpg", "webp", "tif", "gif", "bmp", "pgm",
        ]
    )
    func customLimit(ext: String) throws {
        let png = try Fixtures.qrencode("limit", extra: ["-s", "10"])
        let data = ext == "png" ? png : try Fixtures.convert(png, to: ext)
        #expect(try ImageBuffer.dimensions(of: data).width > 100)
        #expect {
            try BarcodeReader().scan(
                data: data,
                name: "big.\(ext)",
                limits: ImageLimits(maximumPixelCount: 1000)
            )
        } throws: { ($0 as? ImageError)?.code == .tooLarge }
        #expect(try BarcodeReader().scan(data: data).map(\.text) == ["limit"])
    }
}
