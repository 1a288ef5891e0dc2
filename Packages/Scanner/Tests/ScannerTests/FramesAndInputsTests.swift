import Foundation
import Scanner
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Frames, formats and bounded inputs")
struct FramesAndInputsTests {
    /// Three QR codes (frame zero, one, two) from qrencode.
    static func codes() throws -> [Data] {
        try ["frame zero", "frame one", "frame two"].map {
            try Fixtures.qrencode($0, extra: ["-s", "4"])
        }
    }

    /// Runs ImageMagick on files: `convert <inputs> <options> <output>`.
    static func magick(_ inputs: [Data], options: [String], output ext: String) throws -> Data {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var paths: [String] = []
        for (index, data) in inputs.enumerated() {
            let url = dir.appendingPathComponent("\(index).png")
            try data.write(to: url)
            paths.append(url.path)
        }
        let out = dir.appendingPathComponent("out.\(ext)")
        _ = try Fixtures.run(
            "convert",
            paths + options + ["\(ext.hasPrefix("bmp") ? "bmp3:" : "")\(out.path)"]
        )
        return try Data(contentsOf: out)
    }

    static func texts(_ frames: ImageFrames) throws -> [[String]] {
        var texts: [[String]] = []
        while let frame = try frames.next() {
            texts.append(BarcodeReader(options: .fast).scan(frame.image).map(\.text))
        }
        return texts
    }

    @Test(
        "layouts leptonica refused or misread decode and scan: CMYK JPEG, 16-bit, tiled and CMYK TIFF, RLE8 BMP",
        arguments: [
            ("cmyk.jpg", ["-colorspace", "CMYK"]),
            ("grey16.tif", ["-depth", "16"]),
            ("rgb16.tif", ["-type", "TrueColor", "-depth", "16"]),
            ("tiled.tif", ["-define", "tiff:tile-geometry=64x64"]),
            ("tiledrgb.tif", ["-type", "TrueColor", "-define", "tiff:tile-geometry=32x48"]),
            ("cmyk.tif", ["-colorspace", "CMYK"]),
            ("rle8.bmp", ["-type", "Palette", "-compress", "RLE"]),
        ]
    )
    func hardLayouts(name: String, options: [String]) throws {
        let code = try Self.codes()[0]
        let ext = String(name.split(separator: ".").last!)
        let data = try Self.magick([code], options: options, output: ext)
        let frames = try ImageFrames(data: data, name: name)
        #expect(frames.frameCount == 1)
        #expect(try Self.texts(frames) == [["frame zero"]], "\(name)")
    }

    @Test("an RLE4 bitmap with encoded runs, absolute runs, a delta and an end of bitmap decodes")
    func rle4() throws {
        // 8 x 4, palette black (0) and white (1): rows (bottom first) of runs.
        var pixelsData: [UInt8] = []
        pixelsData += [8, 0x11]  // bottom row: 8 white
        pixelsData += [0, 0]  // end of line
        pixelsData += [0, 4, 0x01, 0x01, 0, 0]  // absolute 4 pixels 0,1,0,1 (padded to 16 bits)
        pixelsData += [4, 0x00, 0, 0]  // 4 black, end of line
        pixelsData += [0, 2, 2, 0]  // delta: right 2 in the top row (skipped pixels stay colour 0)
        pixelsData += [2, 0x11, 0, 1]  // 2 white at x = 2 of the top row, end of bitmap
        var file: [UInt8] = Array("BM".utf8)
        let offset = 14 + 40 + 8
        func le32(_ v: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(v).littleEndian) { Array($0) } }
        func le16(_ v: Int) -> [UInt8] { withUnsafeBytes(of: UInt16(v).littleEndian) { Array($0) } }
        file += le32(offset + pixelsData.count) + [0, 0, 0, 0] + le32(offset)
        file += le32(40) + le32(8) + le32(4) + le16(1) + le16(4) + le32(2) + le32(pixelsData.count)
        file += le32(2835) + le32(2835) + le32(2) + le32(0)
        file += [0, 0, 0, 0, 255, 255, 255, 0] + pixelsData
        let image = try ImageBuffer(data: Data(file), name: "rle4.bmp")
        let grey = image.greyscale().pixels
        #expect(image.width == 8 && image.height == 4)
        // Top row (y 0): black except x 2 and 3; then the black run; then 0,1,0,1; bottom white.
        #expect(Array(grey[0..<8]) == [0, 0, 255, 255, 0, 0, 0, 0])
        #expect(Array(grey[8..<12]) == [0, 0, 0, 0])
        #expect(Array(grey[16..<20]) == [0, 255, 0, 255])
        #expect(Array(grey[24..<32]) == [UInt8](repeating: 255, count: 8))
    }

    @Test("every page of a multi-page TIFF and every frame of an animated GIF is read, in order")
    func multipleFrames() throws {
        let codes = try Self.codes()
        for (ext, options) in [("tif", [String]()), ("gif", ["-delay", "10"])] {
            let data = try Self.magick(codes, options: options, output: ext)
            let frames = try ImageFrames(data: data, name: "codes.\(ext)")
            #expect(frames.frameCount == 3, "\(ext)")
            #expect(
                try Self.texts(frames) == [["frame zero"], ["frame one"], ["frame two"]],
                "\(ext)"
            )
        }
    }

    @Test("a GIF frame drawn over part of the previous one is composited as a viewer shows it")
    func gifComposition() throws {
        let codes = try Self.codes()
        // Frame 1 is a white square over the middle of frame 0 (the code under it is hidden).
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = dir.appendingPathComponent("0.png")
        try codes[0].write(to: first)
        let out = dir.appendingPathComponent("anim.gif")
        _ = try Fixtures.run(
            "convert",
            [
                "-delay", "10", first.path, "(", "-size", "60x60", "xc:white", "-repage", "+30+30",
                ")", out.path,
            ]
        )
        let frames = try ImageFrames(data: Data(contentsOf: out), name: "anim.gif")
        let texts = try Self.texts(frames)
        #expect(texts.count == 2)
        #expect(texts.first == ["frame zero"])
        #expect(texts.last == [])
    }

    @Test("more frames than the limit: the first ones are read, then a typed error")
    func frameLimit() throws {
        let data = try Self.magick(try Self.codes(), options: [], output: "tif")
        let frames = try ImageFrames(
            data: data,
            name: "codes.tif",
            limits: ImageLimits(maximumPixelCount: 1_000_000, maximumFrameCount: 2)
        )
        #expect(frames.frameCount == 2 && frames.hasMoreFrames)
        #expect(try frames.next()?.index == 0)
        #expect(try frames.next()?.index == 1)
        #expect { try frames.next() } throws: { ($0 as? ImageError)?.code == .tooLarge }
    }

    @Test("a file larger than the input limit is refused from its size, without reading it")
    func sparseFileRefused() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("huge.png")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        #expect(truncate(url.path, 6 << 30) == 0)
        let input = ScanInput.file(url)
        #expect { try input.decode() } throws: { error in
            let error = error as? ImageError
            return error?.code == .tooLarge && error?.message.contains("6442450944 bytes") == true
        }
    }

    @Test("a stream longer than the input limit stops being read at the limit")
    func streamLimit() throws {
        // A valid small PNG header followed by more than the limit allows.
        var stream = try Fixtures.qrencode("stream", extra: ["-s", "2"])
        stream.append(Data(count: 300_000))
        let data = stream
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("stream.png")
        // The reader stops early: the writer's next write fails with EPIPE, not a signal.
        signal(SIGPIPE, SIG_IGN)
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let writer = Thread {
            let handle = FileHandle(forWritingAtPath: fifo.path)
            try? handle?.write(contentsOf: data)
            try? handle?.close()
        }
        writer.start()
        let limits = ImageLimits(maximumPixelCount: 1_000_000, maximumInputBytes: 200_000)
        #expect { try ScanInput.file(fifo).decode(limits: limits) } throws: { error in
            (error as? ImageError)?.code == .tooLarge
        }
    }

    @Test("a header announcing too many pixels is refused from the first bytes of a file")
    func headerBeforeBody() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("big.png")
        // The header says 60000 x 60000; the body is 900 MB of nothing that is never read.
        try Fixtures.pngHeader(width: 60000, height: 60000).write(to: url)
        #expect(truncate(url.path, 900 << 20) == 0)
        #expect { try ScanInput.file(url).decode() } throws: { error in
            (error as? ImageError)?.code == .tooLarge
                && (error as? ImageError)?.message.contains("60000 x 60000") == true
        }
    }

    @Test(
        "a memory budget lets parallel jobs hold no more than it allows, and a large input runs alone"
    )
    func budgetBoundsParallelWork() async throws {
        let png = try Fixtures.qrencode("budget", extra: ["-s", "20"])
        let pixels = try ImageBuffer.dimensions(of: png)
        let perInput = png.count + MemoryBudget.estimate(pixels: pixels.width * pixels.height)
        // Room for two inputs at a time, then one larger than the whole budget.
        let budget = MemoryBudget(capacity: max(2 * perInput + perInput / 2, 1 << 20))
        let big = try Fixtures.qrencode("budget", extra: ["-s", "60"])
        let inputs =
            (0..<12).map { ScanInput(name: "\($0)", source: .data(png)) }
            + [ScanInput(name: "big", source: .data(big))]
        let peak = Mutex<(now: Int, most: Int, aloneForBig: Bool, overBudget: Bool)>(
            (0, 0, true, false)
        )
        let stream = ImageBatch.process(count: inputs.count, jobs: 6) { index in
            var texts: [String] = []
            inputs[index].forEachFrame(budget: budget) { result in
                let reserved = budget.reserved
                peak.withLock { state in
                    state.now += 1
                    state.most = max(state.most, state.now)
                    if inputs[index].name == "big" && state.now > 1 { state.aloneForBig = false }
                    if inputs[index].name != "big" && reserved > budget.capacity {
                        state.overBudget = true
                    }
                }
                if case .success(let frame) = result {
                    texts += BarcodeReader(options: .fast).scan(frame.image).map(\.text)
                }
                peak.withLock { $0.now -= 1 }
            }
            return texts
        }
        var results: [[String]] = []
        for await texts in stream { results.append(texts) }
        #expect(results == [[String]](repeating: ["budget"], count: 13))
        #expect(peak.withLock { $0.most } <= 2)
        #expect(peak.withLock { $0.aloneForBig })
        #expect(!peak.withLock { $0.overBudget })
        #expect(budget.reserved == 0)
    }

    @Test("directories are walked with every skipped path reported and hostile names kept whole")
    func collection() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = try Fixtures.qrencode("collected", extra: ["-s", "2"])
        let sub = dir.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        try png.write(to: dir.appendingPathComponent("b.png"))
        try png.write(to: sub.appendingPathComponent("a.JPG"))
        try png.write(to: dir.appendingPathComponent(".hidden.png"))
        try Data("notes".utf8).write(to: dir.appendingPathComponent("notes.txt"))
        try png.write(to: dir.appendingPathComponent("new\nline.png"))
        // A name that is not UTF-8: Latin-1 "café.png".
        let latin1 = Array(dir.path.utf8) + Array("/caf".utf8) + [0xE9] + Array(".png".utf8)
        let fd = (latin1 + [0]).withUnsafeBufferPointer {
            $0.withMemoryRebound(to: CChar.self) {
                open($0.baseAddress!, O_WRONLY | O_CREAT, 0o644)
            }
        }
        #expect(fd >= 0)
        png.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
        close(fd)
        #expect(mkfifo(dir.appendingPathComponent("pipe.png").path, 0o600) == 0)
        #expect(symlink("/no/such/target.png", dir.appendingPathComponent("broken.png").path) == 0)
        #expect(symlink(sub.path, dir.appendingPathComponent("loop").path) == 0)

        let collected = InputCollection([dir.path], recursive: true)
        let names = collected.inputs.map { String($0.name.dropFirst(dir.path.count + 1)) }
        #expect(names == ["b.png", "caf\\xE9.png", "new\nline.png", "sub/a.JPG"])
        let skipped = collected.skipped.map { String($0.path.dropFirst(dir.path.count + 1)) }
            .sorted()
        #expect(skipped == ["broken.png", "pipe.png"])
        #expect(collected.skipped.allSatisfy { $0.description.hasSuffix("; skipped") })
        // Every collected file is readable through its name, the Latin-1 one too.
        for input in collected.inputs {
            #expect(
                BarcodeReader(options: .fast).scan(try input.decode()).map(\.text) == ["collected"]
            )
        }
        // Without recursion the directory itself is what is skipped.
        #expect(InputCollection([dir.path], recursive: false).skipped.map(\.reason) == [.directory])
    }

    @Test("names are escaped for a terminal: control characters, invalid UTF-8, backslashes")
    func terminalEscaping() {
        #expect(TerminalText.escaped("a\u{1B}[31mred\nb\\c") == "a\\x1B[31mred\\x0Ab\\\\c")
        #expect(TerminalText.name(Array("ok/é".utf8)) == "ok/é")
        #expect(TerminalText.name([0x61, 0xFF, 0x62, 0xC3]) == "a\\xFFb\\xC3")
    }

    @Test(
        "fuzzed TIFF, GIF and BMP frames give frames or typed errors, never a crash",
        arguments: ["tif", "gif", "bmp"]
    )
    func fuzzedFrames(ext: String) throws {
        let codes = try Self.codes()
        let original = [UInt8](
            try Self.magick(
                ext == "bmp" ? [codes[0]] : codes,
                options: ext == "bmp" ? ["-type", "Palette", "-compress", "RLE"] : [],
                output: ext
            )
        )
        var generator = SeededGenerator(seed: UInt64(ext.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) }))
        var outcomes: [String: Int] = [:]
        for _ in 0..<300 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[at] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                bytes.removeLast(Int.random(in: 0..<bytes.count / 2, using: &generator))
            }
            do {
                let frames = try ImageFrames(
                    data: Data(bytes),
                    name: "fuzzed.\(ext)",
                    limits: ImageLimits(maximumPixelCount: 4_000_000)
                )
                var count = 0
                while try frames.next() != nil { count += 1 }
                outcomes["frames", default: 0] += 1
            } catch {
                outcomes[error.code.rawValue, default: 0] += 1
            }
        }
        // Both outcomes happen: the mutations reach the decoders, and damage is reported.
        #expect(outcomes["frames", default: 0] > 0, "\(outcomes)")
        #expect(outcomes.count > 1, "\(outcomes)")
    }
}
