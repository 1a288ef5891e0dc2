import Foundation
import Testing

/// Codes and files made at test time with the real tools (qrencode, zint, dmtxwrite,
/// ImageMagick), and the corpus location.
enum Fixtures {
    struct ToolError: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs a tool, feeding `input` on stdin; returns stdout.
    static func run(_ tool: String, _ arguments: [String], input: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let stdout = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        process.standardError = FileHandle.nullDevice
        try process.run()
        let writer = Thread {
            if let input { stdin.fileHandleForWriting.write(input) }
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ToolError(
                description:
                    "\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)"
            )
        }
        return output
    }

    /// A QR code PNG from qrencode (payload on stdin, bytes as given).
    static func qrencode(_ text: String, extra: [String] = []) throws -> Data {
        try qrencode(bytes: Data(text.utf8), extra: extra)
    }

    static func qrencode(bytes: Data, extra: [String] = []) throws -> Data {
        try run("qrencode", ["-o", "-", "-t", "PNG"] + extra, input: bytes)
    }

    /// A PNG from zint for `barcodeType` (zint's --barcode names).
    static func zint(_ barcodeType: String, _ data: String, extra: [String] = []) throws -> Data {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("code.png")
        _ = try run(
            "zint",
            ["--barcode=\(barcodeType)", "--data=\(data)", "--output=\(out.path)"] + extra
        )
        return try Data(contentsOf: out)
    }

    /// A DataMatrix PNG from dmtxwrite.
    static func dmtxwrite(_ bytes: Data, extra: [String] = []) throws -> Data {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("code.png")
        _ = try run("dmtxwrite", ["-o", out.path] + extra, input: bytes)
        return try Data(contentsOf: out)
    }

    /// `code` (a zint symbol of one-pixel modules) photographed as
    /// `scripts/fixtures/families-barcodes.py` photographs its set: on a light label with a
    /// quiet zone, scaled to `percent`, turned by `degrees`, on a grey ground, blurred by
    /// `blur` px, camera noise from `seed`; with `corners` (ImageMagick's perspective pairs)
    /// also seen at an angle, as its hard half is. Saved as `format` at `quality`.
    static func photographed(
        _ code: Data,
        percent: Int,
        degrees: Int,
        blur: Double,
        seed: Int,
        corners: String? = nil,
        format: String = "png",
        quality: Int? = nil
    ) throws -> Data {
        var options = [
            "-colorspace", "gray", "-bordercolor", "white", "-border", "12", "-filter",
            "Triangle", "-resize", "\(percent)%", "-background", "white", "-rotate",
            "\(degrees)", "-bordercolor", "gray80", "-border", "30", "-blur", "0x\(blur)",
            "-seed", "\(seed)", "-attenuate", "0.4", "+noise", "Gaussian", "-colorspace", "gray",
        ]
        if let corners {
            options += ["-virtual-pixel", "edge", "-distort", "Perspective", corners]
        }
        if let quality { options += ["-quality", "\(quality)"] }
        return try convert(code, to: format, options: options)
    }

    /// Converts an image with ImageMagick (`convert - <options> ext:-`).
    static func convert(_ image: Data, to ext: String, options: [String] = []) throws -> Data {
        try run("convert", ["-"] + options + ["\(ext):-"], input: image)
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "scanner-tests-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A PNG signature and IHDR announcing `width` x `height`, then nothing.
    static func pngHeader(width: UInt32, height: UInt32) -> Data {
        var data = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13])
        data.append(contentsOf: Array("IHDR".utf8))
        for v in [width, height] {
            data.append(contentsOf: withUnsafeBytes(of: v.bigEndian) { Array($0) })
        }
        data.append(contentsOf: [8, 0, 0, 0, 0])
        data.append(contentsOf: [0, 0, 0, 0])  // CRC (not checked before the size)
        return data
    }

    /// The directory of a set generated by `scripts/fixtures/NAME.py` (cached per machine,
    /// generated first when the cache lacks it). The generators that derive from the corpus
    /// read SHOPFLOOR_CORPUS, set here to the corpus the tests use.
    static func generatedSet(_ name: String) throws -> URL {
        // This file is <repo>/Packages/Scanner/Tests/ScannerTests/Fixtures.swift.
        let repo = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let script = repo.appendingPathComponent("scripts/fixtures/\(name).py")
        let output = try run(
            "env",
            ["SHOPFLOOR_CORPUS=\(corpus.deletingLastPathComponent().path)", "python3", script.path]
        )
        return URL(
            fileURLWithPath: String(decoding: output, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        )
    }

    /// The barcode corpus: $SHOPFLOOR_CORPUS/barcodes, else <repo>/../shared/corpus/barcodes.
    static var corpus: URL {
        if let root = ProcessInfo.processInfo.environment["SHOPFLOOR_CORPUS"], !root.isEmpty {
            return URL(fileURLWithPath: root).appendingPathComponent("barcodes")
        }
        // This file is <repo>/Packages/Scanner/Tests/ScannerTests/Fixtures.swift.
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/corpus/barcodes")
    }
}
