import ChildProcesses
import Foundation
import Testing

/// `scan --text`: the binary on labels rendered with ImageMagick at test time.
@Suite("scan --text (OCR)")
struct ScanTextTests {
    static let font =
        [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/opentype/urw-base35/NimbusSans-Regular.otf",
        ].first { FileManager.default.fileExists(atPath: $0) } ?? "DejaVu-Sans"

    /// ImageMagick's `convert` is found on PATH through `env`.
    static let env = URL(fileURLWithPath: "/usr/bin/env")

    /// Renders `text` at `dpi` into `dir/name` with ImageMagick; returns the path.
    static func label(_ text: String, dpi: Int = 200, in dir: URL, name: String) async throws
        -> String
    {
        let path = dir.appendingPathComponent(name).path
        let run = try await CommandRunner.run(
            env,
            [
                "convert", "-density", "\(dpi)", "-units", "PixelsPerInch", "-font", font,
                "-pointsize", "11",
                "-background", "white", "-fill", "black", "label:\(text)", "-bordercolor",
                "white", "-border", "12",
                path,
            ]
        )
        try #require(run.status == 0)
        return path
    }

    static func blank(in dir: URL) async throws -> String {
        let path = dir.appendingPathComponent("blank.png").path
        _ = try await CommandRunner.run(env, ["convert", "-size", "200x80", "xc:white", path])
        return path
    }

    @Test("JSON lines carry text, lines with confidence and box, and matches; exit 0")
    func jsonl() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try await Self.label(
            "IMEI 490154203237518\nMade in Germany",
            in: dir,
            name: "imei.png"
        )
        let run = try await ScanTool.run([
            "--text", "--validate", "imei", "--format", "jsonl", path,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        )
        #expect(object["file"] as? String == path)
        #expect(object["text"] as? String == "IMEI 490154203237518\nMade in Germany")
        let lines = try #require(object["lines"] as? [[String: Any]])
        #expect(lines.count == 2)
        let confidence = try #require(lines.first?["confidence"] as? Double)
        #expect(confidence > 0.5 && confidence <= 1)
        #expect((lines.first?["box"] as? [Int])?.count == 4)
        let matches = try #require(object["matches"] as? [[String: Any]])
        #expect(matches.count == 1)
        #expect(matches.first?["validator"] as? String == "imei")
        #expect(matches.first?["text"] as? String == "490154203237518")
        #expect(object["error"] is NSNull)
        #expect((object["symbols"] as? [Any])?.isEmpty == true)
    }

    @Test("Text output prints the lines; validated text prints validator:text")
    func textFormat() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try await Self.label("EAN 4006381333931\nLot AB-1234", in: dir, name: "ean.png")
        let plain = try await ScanTool.run(["--text", "--quiet", path])
        #expect(plain.status == 0)
        #expect(plain.stdout == "EAN 4006381333931\nLot AB-1234\n")
        let validated = try await ScanTool.run([
            "--text", "--quiet", "--level", "accurate", "--validate", "gtin", "--validate",
            "[A-Z]{2}-[0-9]{4}", path,
        ])
        #expect(validated.status == 0)
        #expect(validated.stdout == "gtin:4006381333931\nregex:AB-1234\n")
    }

    @Test("Exit 4 when a readable image has no text (or no valid match), 1 when one cannot be read")
    func exitCodes() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = try await Self.label("Hello shelf 12", in: dir, name: "text.png")
        let blank = try await Self.blank(in: dir)
        #expect(try await ScanTool.run(["--text", "--quiet", text, blank]).status == 4)
        #expect(
            try await ScanTool.run(["--text", "--quiet", "--validate", "imei", text]).status == 4
        )
        let missing = dir.appendingPathComponent("missing.png").path
        let run = try await ScanTool.run([
            "--text", "--format", "jsonl", "--quiet", text, missing, blank,
        ])
        #expect(run.status == 1)
        #expect(run.stdout.split(separator: "\n").count == 3)
        #expect(run.stderr.contains("missing.png"))
    }

    @Test("--barcodes alongside --text reports both")
    func both() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try await Self.label("Hello shelf 12", in: dir, name: "text.png")
        let run = try await ScanTool.run(["--text", "--barcodes", "--format", "jsonl", path])
        #expect(run.status == 0)
        #expect(run.stdout.contains("\"symbols\":[]"))
        #expect(run.stdout.contains("\"text\":\"Hello shelf 12\""))
    }

    @Test(
        "Every --level reads a clear label; auto is the default in --help",
        arguments: ["auto", "fast", "accurate"]
    )
    func levels(level: String) async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try await Self.label("Aisle 7 Shelf C\nReorder 12", in: dir, name: "shelf.png")
        let run = try await ScanTool.run(["--text", "--quiet", "--level", level, path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "Aisle 7 Shelf C\nReorder 12\n")
        let help = try await ScanTool.run(["--help"]).stdout.split(whereSeparator: \.isWhitespace)
            .joined(separator: " ")
        #expect(help.contains("auto (deskew, one pass, more passes only where unsure)"))
        #expect(help.contains("(values: auto, fast, accurate; default: auto)"))
    }

    @Test(
        "Bad text options are usage errors (64) naming the problem",
        arguments: [
            (["--validate", "imei", "x.png"], "--validate needs --text"),
            (["--text", "--lang", "xyz", "x.png"], "xyz"),
            (["--text", "--validate", "([a-", "x.png"], "invalid regular expression"),
            (["--text", "--level", "slow", "x.png"], "slow"),
        ]
    )
    func usage(arguments: [String], message: String) async throws {
        let run = try await ScanTool.run(arguments)
        #expect(run.status == 64)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    @Test("A missing language names where it looked")
    func missingLanguage() async throws {
        let run = try await ScanTool.run([
            "--text", "--lang", "eng+xyz", "--tessdata", "/nonexistent", "x.png",
        ])
        #expect(run.status == 64)
        #expect(run.stderr.contains("/nonexistent"))
        #expect(run.stderr.contains("/usr/share/tesseract-ocr/5/tessdata"))
    }
}

/// libtesseract is loaded on first use (CTesseract's dlopen), not when `scan` starts.
@Suite("scan loads Tesseract only for --text, and never the shared libzbar")
struct ScanLazyTesseractTests {
    /// The loader's list of the files it maps (LD_DEBUG=files, on stderr).
    static func mapped(_ arguments: [String]) async throws -> (ProcessOutcome, Bool) {
        var environment = ProcessInfo.processInfo.environment
        environment["LD_DEBUG"] = "files"
        let run = try await CommandRunner.run(ScanTool.binary, arguments, environment: environment)
        return (run, run.stderr.contains("libtesseract.so"))
    }

    @Test("--help and barcode scans never map libtesseract; --text does")
    func lazy() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let help = try await Self.mapped(["--help"])
        #expect(help.0.status == 0)
        #expect(help.0.stderr.contains("liblept"), "LD_DEBUG=files lists the loader's files")
        #expect(!help.1)
        // libzbar is linked from its static archive: neither the shared one nor the X11 and
        // video4linux libraries it would bring are mapped.
        for library in ["libzbar.so", "libX11.so", "libv4l2.so"] {
            #expect(!help.0.stderr.contains(library), "\(library) mapped at start")
        }
        let qr = ScanTool.corpus.appendingPathComponent("qrcode-2/1.png").path
        let barcodes = try await Self.mapped(["--quiet", qr])
        #expect(barcodes.0.status == 0)
        #expect(!barcodes.1)
        let label = try await ScanTextTests.label("Aisle 7", in: dir, name: "aisle.png")
        let text = try await Self.mapped(["--text", "--quiet", label])
        #expect(text.0.status == 0)
        #expect(text.0.stdout == "Aisle 7\n")
        #expect(text.1)
    }
}
