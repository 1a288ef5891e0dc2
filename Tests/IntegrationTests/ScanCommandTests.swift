import ChildProcesses
import CommandSupport
import Foundation
import Models
import Scanner
import Testing

/// The `scan` binary, run as a user runs it: real files, real pipes, real exit codes.
enum ScanTool {
    typealias Run = ProcessOutcome

    /// The build products directory holds both this test bundle and the apps.
    static var binary: URL { CommandRunner.builtBinary("scan") }

    /// The barcode corpus: $SHOPFLOOR_CORPUS/barcodes, else <repo>/../shared/corpus/barcodes.
    static var corpus: URL {
        if let root = ProcessInfo.processInfo.environment["SHOPFLOOR_CORPUS"], !root.isEmpty {
            return URL(fileURLWithPath: root).appendingPathComponent("barcodes")
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "shared/corpus/barcodes"
            )
    }

    static func run(_ arguments: [String], stdin: Data? = nil, interruptAfter: Double? = nil)
        async throws
        -> Run
    {
        try await CommandRunner.run(binary, arguments, stdin: stdin, interruptAfter: interruptAfter)
    }

    static func temporaryDirectory() throws -> URL {
        try CommandRunner.temporaryDirectory(prefix: "scan-it")
    }
}

@Suite("scan command", .serialized)
struct ScanCommandTests {
    let upca = ScanTool.corpus.appendingPathComponent("upca-1/2.webp").path
    let qr = ScanTool.corpus.appendingPathComponent("qrcode-2/1.png").path
    let empty = ScanTool.corpus.appendingPathComponent("falsepositives-1/01.webp").path

    @Test("text output is zbarimg's TYPE:payload, with UPC-A as 13 digits; exit 0")
    func textOutput() async throws {
        let run = try await ScanTool.run(["--quiet", upca])
        #expect(run.status == 0)
        #expect(run.stdout == "UPC-A:0036602301467\n")
        #expect(run.stderr.isEmpty)
    }

    /// libzbar's DataBar decoder gave up on this image with "WARNING: decoder/databar.c:1265:
    /// _zbar_decode_databar: Assertion ... failed." and its state on stderr.
    @Test("libzbar's own assertion messages never reach scan's stderr")
    func zbarQuiet() async throws {
        // This file is <repo>/Tests/IntegrationTests/ScanCommandTests.swift.
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let script = repo.appendingPathComponent("scripts/fixtures/families-barcodes.py").path
        let set = try await CommandRunner.run(URL(fileURLWithPath: "/usr/bin/python3"), [script])
        try #require(set.status == 0, "\(set.stderr)")
        let image = URL(
            fileURLWithPath: set.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        ).appendingPathComponent("itf14/plain-a150-s150.png")
        let run = try await ScanTool.run(["--quiet", image.path])
        #expect(run.status == 0)
        #expect(run.stdout == "I2/5:12345678901231\n")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
    }

    @Test("--version prints the suite's version")
    func version() async throws {
        let run = try await ScanTool.run(["--version"])
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == SuiteVersion.current)
    }

    @Test("jsonl: one object per input in input order, error null or a message")
    func jsonl() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let notImage = dir.appendingPathComponent("notes.png")
        try Data("just text".utf8).write(to: notImage)
        let run = try await ScanTool.run([
            "--format", "jsonl", "--quiet", upca, notImage.path, empty,
        ])
        #expect(run.status == 1)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 3)
        let objects = try lines.map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["file"] as? String } == [upca, notImage.path, empty])
        let symbol = try #require((objects[0]["symbols"] as? [[String: Any]])?.first)
        #expect(symbol["format"] as? String == "UPCA")
        #expect(symbol["text"] as? String == "0036602301467")
        #expect(
            symbol["bytesBase64"] as? String == Data("0036602301467".utf8).base64EncodedString()
        )
        #expect((symbol["points"] as? [[Int]])?.count == 4)
        #expect(["zxing", "zbar"].contains(symbol["engine"] as? String))
        #expect(objects[0]["error"] is NSNull)
        #expect((objects[1]["error"] as? String)?.contains("not an image") == true)
        #expect((objects[2]["symbols"] as? [Any])?.isEmpty == true)
        #expect(run.stderr.hasPrefix("error: \(notImage.path)"))
    }

    @Test("csv: header file,format,text and RFC 4180 quoting")
    func csv() async throws {
        let multiline = ScanTool.corpus.appendingPathComponent("qrcode-2/16.webp").path
        let run = try await ScanTool.run(["-f", "csv", "-q", upca, multiline])
        #expect(run.status == 0)
        #expect(
            run.stdout.hasPrefix(
                "file,format,text\n\(upca),UPCA,0036602301467\n\(multiline),QRCode,\""
            )
        )
    }

    @Test("exit codes: 4 when a readable input has no symbol, 1 when one is unreadable (1 wins)")
    func exitCodes() async throws {
        #expect(try await ScanTool.run(["-q", upca, empty]).status == 4)
        #expect(try await ScanTool.run(["-q", upca, empty, "/no/such/file.png"]).status == 1)
        #expect(try await ScanTool.run(["-q", upca, qr]).status == 0)
    }

    @Test(
        "usage errors exit 64",
        arguments: [
            [String](), ["--jobs", "0", "x.png"], ["--symbologies", "nonsense", "x.png"],
            ["--format", "xml", "x.png"],
            ["--region", "1,2,3", "x.png"], ["-", "-"],
        ]
    )
    func usage(arguments: [String]) async throws {
        let run = try await ScanTool.run(arguments)
        #expect(run.status == 64)
        #expect(run.stderr.hasPrefix("error: "), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test("--help prints the usage on stdout and exits 0")
    func help() async throws {
        let run = try await ScanTool.run(["--help"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("USAGE: scan"))
        #expect(run.stderr.isEmpty)
    }

    @Test("- reads one image from stdin")
    func stdin() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: upca))
        let run = try await ScanTool.run(["--format", "jsonl", "-q", "-"], stdin: data)
        #expect(run.status == 0)
        let report = try JSONDecoder().decode(ScanReport.self, from: Data(run.stdout.utf8))
        #expect(report.file == "-")
        #expect(report.symbols.map(\.format) == ["UPCA"])
        #expect(report.error == nil)
    }

    @Test("directories need --recursive, which finds images in subdirectories in sorted order")
    func recursive() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sub = dir.appendingPathComponent("b-sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: upca,
            toPath: sub.appendingPathComponent("code.webp").path
        )
        try FileManager.default.copyItem(
            atPath: qr,
            toPath: dir.appendingPathComponent("a.png").path
        )
        try Data("skip me".utf8).write(to: dir.appendingPathComponent("readme.txt"))

        let flat = try await ScanTool.run(["-q", dir.path])
        #expect(flat.status == 1)
        #expect(flat.stderr.contains("--recursive"))

        let deep = try await ScanTool.run(["-q", "-r", "-f", "csv", dir.path])
        #expect(deep.status == 0)
        let files = deep.stdout.split(separator: "\n").dropFirst().map {
            $0.split(separator: ",").first.map(String.init) ?? ""
        }
        #expect(files == [dir.path + "/a.png", dir.path + "/b-sub/code.webp"])
    }

    @Test("--symbologies limits what is reported")
    func symbologies() async throws {
        let run = try await ScanTool.run(["-q", "--symbologies", "qr,datamatrix", upca])
        #expect(run.status == 4)
        #expect(run.stdout.isEmpty)
    }

    @Test("bad inputs give one error line each and no library noise on stderr")
    func badInputs() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = try Data(contentsOf: URL(fileURLWithPath: qr))
        let jpeg = try Data(
            contentsOf: ScanTool.corpus.appendingPathComponent("qrcode-2/high-res-1.jpg")
        )
        var huge = Data(
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        )
        huge.append(contentsOf: [0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60, 8, 0, 0, 0, 0, 0, 0, 0, 0])
        let files: [(String, Data)] = [
            ("empty.png", Data()), ("truncated.png", png.prefix(png.count / 2)),
            ("truncated.jpg", jpeg.prefix(jpeg.count / 2)), ("text.png", Data("hello\n".utf8)),
            ("huge.png", huge),
        ]
        var paths: [String] = []
        for (name, data) in files {
            let url = dir.appendingPathComponent(name)
            try data.write(to: url)
            paths.append(url.path)
        }
        let run = try await ScanTool.run(["-q"] + paths + [dir.path])
        #expect(run.status == 1)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == paths.count + 1, "\(run.stderr)")
        #expect(lines.allSatisfy { $0.hasPrefix("error: ") }, "\(run.stderr)")
        #expect(run.stderr.contains("60000 x 60000"))
    }

    @Test("SIGINT stops the scan, keeps what was printed whole, and exits 130")
    func interrupt() async throws {
        // Images with no symbol run every fallback pass: slow enough to interrupt midway.
        let many = Array([[String]](repeating: [qr, empty], count: 200).joined())
        let run = try await ScanTool.run(
            ["-q", "--jobs", "1", "-f", "csv"] + many,
            interruptAfter: 1.5
        )
        #expect(run.status == 130)
        let rows = run.stdout.split(separator: "\n").dropFirst()
        #expect(rows.count < 200)
        #expect(rows.allSatisfy { $0.hasPrefix("\(qr),QRCode,") })
    }
}
