import Foundation
import Scanner
import Testing

/// `scan --annotate DIR`: the binary writes pictures, which are decoded and checked where the
/// JSON lines put the symbols and the text.
@Suite("scan --annotate")
struct ScanAnnotateTests {
    static let qr = ScanTool.corpus.appendingPathComponent("qrcode-2/1.png").path
    static let upca = ScanTool.corpus.appendingPathComponent("upca-1/2.webp").path

    /// Whether a pixel within 3 of (x, y) is close to `want`.
    static func hasColour(
        _ image: ImageBuffer,
        near x: Int,
        _ y: Int,
        _ want: (UInt8, UInt8, UInt8)
    ) -> Bool {
        for dy in -3...3 {
            for dx in -3...3 {
                let px = x + dx
                let py = y + dy
                guard px >= 0, py >= 0, px < image.width, py < image.height else { continue }
                let i = py * image.stride + px * image.format.channels
                let c = (Int(image.pixels[i]), Int(image.pixels[i + 1]), Int(image.pixels[i + 2]))
                if abs(c.0 - Int(want.0)) < 40, abs(c.1 - Int(want.1)) < 40,
                    abs(c.2 - Int(want.2)) < 40
                {
                    return true
                }
            }
        }
        return false
    }

    static func objects(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test(
        "One PNG per input, the input's size times a whole factor, outlines on the symbols' points"
    )
    func symbols() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("pictures/new")
        let run = try await ScanTool.run([
            "--format", "jsonl", "--quiet", "--annotate", out.path, Self.qr, Self.upca,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(names == ["1.annotated.png", "2.annotated.png"])
        for (object, name) in zip(try Self.objects(run.stdout), ["1", "2"]) {
            let input = try ImageBuffer(contentsOf: URL(fileURLWithPath: object["file"] as! String))
            let picture = try ImageBuffer(
                contentsOf: out.appendingPathComponent("\(name).annotated.png")
            )
            let scale = picture.width / input.width
            #expect(scale >= 1 && scale <= 4)
            #expect(picture.width == input.width * scale && picture.height == input.height * scale)
            let symbols = try #require(object["symbols"] as? [[String: Any]])
            try #require(!symbols.isEmpty)
            for symbol in symbols {
                let points = try #require(symbol["points"] as? [[Int]])
                let bounds = (
                    points.map { $0[0] }.min()!, points.map { $0[0] }.max()!,
                    points.map { $0[1] }.min()!, points.map { $0[1] }.max()!
                )
                if bounds.1 - bounds.0 > 8, bounds.3 - bounds.2 > 8 {
                    for p in points {
                        #expect(
                            Self.hasColour(
                                picture,
                                near: p[0] * scale,
                                p[1] * scale,
                                Annotation.symbolColour
                            ),
                            "\(name): no outline at \(p)"
                        )
                    }
                } else {
                    // A scan line: the box around it.
                    #expect(
                        Self.hasColour(
                            picture,
                            near: (bounds.0 + bounds.1) / 2 * scale,
                            bounds.2 * scale - 3 * max(2, min(picture.width, picture.height) / 300),
                            Annotation.symbolColour
                        )
                    )
                }
            }
        }
    }

    @Test("--text: each line's box is drawn where the JSON puts it")
    func textLines() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let label = try await ScanTextTests.label(
            "Lot 2291 Aisle 7\nBest before 2026",
            dpi: 300,
            in: dir,
            name: "label.png"
        )
        let out = dir.appendingPathComponent("out")
        let run = try await ScanTool.run([
            "--text", "--barcodes", "--format", "jsonl", "--quiet", "--annotate", out.path, label,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try Self.objects(run.stdout).first)
        let lines = try #require(object["lines"] as? [[String: Any]])
        #expect(lines.count == 2)
        let input = try ImageBuffer(contentsOf: URL(fileURLWithPath: label))
        let picture = try ImageBuffer(contentsOf: out.appendingPathComponent("label.annotated.png"))
        let scale = picture.width / input.width
        #expect(picture.height == input.height * scale)
        for line in lines {
            let box = try #require(line["box"] as? [Int])
            let confidence = try #require(line["confidence"] as? Double)
            let colour =
                confidence < Annotation.lowConfidence
                ? Annotation.doubtfulTextColour : Annotation.textColour
            #expect(
                Self.hasColour(picture, near: box[0] * scale, (box[1] + box[3] / 2) * scale, colour)
            )
            #expect(
                Self.hasColour(
                    picture,
                    near: (box[0] + box[2]) * scale,
                    (box[1] + box[3] / 2) * scale,
                    colour
                )
            )
        }
    }

    @Test("Same file names get -2, stdin is stdin, an unreadable input gets no picture (exit 1)")
    func names() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("a")
        let b = dir.appendingPathComponent("b")
        for sub in [a, b] {
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                at: URL(fileURLWithPath: Self.qr),
                to: sub.appendingPathComponent("code.png")
            )
        }
        let broken = dir.appendingPathComponent("broken.png")
        try Data("not an image".utf8).write(to: broken)
        let out = dir.appendingPathComponent("out")
        let run = try await ScanTool.run(
            [
                "--quiet", "--annotate", out.path, a.appendingPathComponent("code.png").path,
                b.appendingPathComponent("code.png").path, broken.path, "-",
            ],
            stdin: try Data(contentsOf: URL(fileURLWithPath: Self.qr))
        )
        #expect(run.status == 1)
        #expect(run.stderr.contains("broken.png"))
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(names == ["code-2.annotated.png", "code.annotated.png", "stdin.annotated.png"])
        for name in names {
            #expect(try ImageBuffer(contentsOf: out.appendingPathComponent(name)).format == .rgb)
        }
    }

    @Test("A directory that cannot be made is exit 1 naming it, before any image is scanned")
    func unwritable() async throws {
        let dir = try ScanTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("file.txt")
        try Data("x".utf8).write(to: file)
        let target = file.appendingPathComponent("sub").path
        let run = try await ScanTool.run(["--format", "jsonl", "--annotate", target, Self.qr])
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.hasPrefix("error: \(target): cannot make the --annotate directory"))
        let empty = try await ScanTool.run(["--annotate", "", Self.qr])
        #expect(empty.status == 64)
    }
}
