import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Scanner

/// `scan`: barcodes from image files, like zbarimg, with ZXing's symbologies as well.
@main
struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Read barcodes (QR, DataMatrix, PDF417, EAN/UPC, Code 128, ...) from images.",
        discussion: """
            Reads PNG, JPEG, WebP, TIFF, GIF, PNM and BMP files with libzbar and ZXing-C++ and \
            prints every distinct symbol. `-` reads one image from stdin; directories are \
            scanned with --recursive.

            Formats: text (zbarimg style, `QR-Code:payload`), jsonl (one JSON object per input: \
            file, symbols with format, text, bytesBase64, points, engine; error), csv (file,format,text).

            Exit status: 0 every input had a symbol; 4 some readable input had none; 1 an input \
            could not be read (the others are still scanned; 1 wins over 4); 64 usage; 130 interrupted.

            Examples:
              scan label.png
              scan --format jsonl --symbologies qr,datamatrix photos/*.jpg
              scan --recursive --jobs 2 --quiet shelf/ > codes.txt
              curl -s https://example.com/code.png | scan -
              scan --text --validate imei --format jsonl box.png   (OCR: "text", "lines", "matches")
            """,
        version: SuiteVersion.current
    )

    @Argument(help: "Image files, directories (with --recursive), or - for stdin.")
    var inputs: [String] = []

    @Option(name: .shortAndLong, help: "Output format: text, jsonl or csv.")
    var format: OutputFormat = .text

    @Option(
        name: .long,
        help:
            "Comma-separated symbologies to look for (\(Symbology.allCases.map(\.commandLineName).joined(separator: ","))). Default: all.",
        transform: SymbologyList.parse
    )
    var symbologies: SymbologyList?

    @Option(name: .shortAndLong, help: "Effort on hard images: fast, balanced or thorough.")
    var effort: EffortArgument = .balanced

    @Option(name: .shortAndLong, help: "Images decoded in parallel (default: available cores).")
    var jobs: Int?

    @Flag(name: .shortAndLong, help: "Scan directories and their subdirectories.")
    var recursive = false

    @Option(name: .long, help: "Stop after this many symbols per image.")
    var maxSymbols: Int?

    @Option(
        name: .long,
        help: "Scan only this region of each image: X,Y,WIDTH,HEIGHT in pixels.",
        transform: RegionArgument.parse
    )
    var region: PixelRect?

    @Flag(name: .long, help: "Do not look for rotated symbols.")
    var noRotations = false

    @Flag(name: .long, help: "Do not look for inverted (light on dark) symbols.")
    var noInverted = false

    @Option(name: .long, help: "Refuse images with more megapixels than this, before decoding.")
    var maxMegapixels: Int = 100

    @OptionGroup(title: "Text recognition (OCR)") var textMode: TextModeOptions

    @OptionGroup var common: CommonOptions

    mutating func validate() throws {
        if inputs.isEmpty { throw ValidationError("give at least one image file, directory or -") }
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if let maxSymbols, maxSymbols < 1 {
            throw ValidationError("--max-symbols must be at least 1")
        }
        if maxMegapixels < 1 { throw ValidationError("--max-megapixels must be at least 1") }
        if inputs.filter({ $0 == "-" }).count > 1 {
            throw ValidationError("stdin (-) can be read only once")
        }
        if common.json { format = .jsonl }
    }

    /// Catches SIGINT before parsing, so even an interrupt during a long argument list exits
    /// 130, and reports usage errors with the suite's `error:` prefix.
    static func main() async {
        OpenMPEnvironment.ensureSingleThreaded()
        InterruptWatch.shared.install()
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exitReporting(error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var syncCommand = command
                try syncCommand.run()
            }
        } catch {
            exitReporting(error)
        }
    }

    /// `--help` and `--version` on stdout with 0; usage errors as `error: ...` on stderr with 64;
    /// exit statuses thrown by `run()` as they are (their messages are already printed).
    private static func exitReporting(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        if error is ExitCode { Foundation.exit(code.rawValue) }
        let message = fullMessage(for: error)
        if code == .success {
            if !message.isEmpty { print(message) }
            Foundation.exit(code.rawValue)
        }
        var text = message
        if text.hasPrefix("Error: ") { text = "error: " + text.dropFirst("Error: ".count) }
        Console.write(text.hasSuffix("\n") ? text : text + "\n")
        Foundation.exit(code.rawValue)
    }

    func run() async throws {
        let interrupt = InterruptWatch.shared
        let logger = common.makeLogger(label: "shopfloor.scan")
        let options = BarcodeScanOptions(
            symbologies: symbologies?.set ?? Set(Symbology.allCases),
            regionOfInterest: region,
            effort: effort.effort,
            searchesRotations: !noRotations,
            searchesInverted: !noInverted,
            maximumSymbols: maxSymbols
        )
        let collected = InputCollector(recursive: recursive).collect(inputs)
        var sawUnreadable = !collected.errors.isEmpty
        for error in collected.errors { Console.error(error) }

        let textReader = try textMode.makeReader(region: region, logger: logger)
        let scanner = FileScanner(
            barcodes: textMode.readsBarcodes
                ? BarcodeReader(options: options, logger: logger) : nil,
            limits: ImageLimits(maximumPixelCount: maxMegapixels * 1_000_000),
            text: textReader
        )
        let writer = RecordWriter(format: format)
        let progress = Progress(
            total: collected.inputs.count,
            enabled: !common.quiet && Console.stderrIsTerminal
        )
        var sawEmpty = false
        var symbolCount = 0
        let started = ContinuousClock.now

        writer.begin()
        let items = collected.inputs
        let stream = ImageBatch.process(count: items.count, jobs: jobs ?? ImageBatch.defaultJobs) {
            index in
            scanner.scan(items[index])
        }
        for await record in stream {
            if interrupt.fired { break }
            writer.write(record)
            progress.step()
            if let error = record.error {
                sawUnreadable = true
                progress.clear()
                Console.error(error.description)
            } else if let error = record.textError {
                sawUnreadable = true
                progress.clear()
                Console.error(error.description)
            } else if record.isEmpty {
                sawEmpty = true
            }
            symbolCount += record.symbols.count
        }
        writer.end()
        progress.clear()
        if interrupt.fired {
            if !common.quiet { Console.note("scan: interrupted") }
            throw ExitStatus.interrupted.exitCode
        }
        if !common.quiet {
            let seconds = (ContinuousClock.now - started).formatted(
                .units(allowed: [.seconds], fractionalPart: .show(length: 2))
            )
            Console.note(
                textMode.text && !textMode.barcodes
                    ? "read text from \(items.count) images in \(seconds)"
                    : "scanned \(symbolCount) barcode symbols from \(items.count) images in \(seconds)"
            )
        }
        if sawUnreadable { throw ExitStatus.failure.exitCode }
        if sawEmpty { throw ExitStatus.nothingFound.exitCode }
    }
}

/// Output formats of `scan`.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, jsonl, csv
}

/// `--effort fast|balanced|thorough`
enum EffortArgument: String, ExpressibleByArgument, CaseIterable {
    case fast, balanced, thorough

    var effort: BarcodeScanOptions.Effort {
        switch self {
        case .fast: .fast
        case .balanced: .balanced
        case .thorough: .thorough
        }
    }
}

/// `--symbologies qr,ean13,...`
struct SymbologyList {
    var set: Set<Symbology>

    static func parse(_ argument: String) throws -> SymbologyList {
        var set = Set<Symbology>()
        for name in argument.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
        where !name.isEmpty {
            guard let symbology = Symbology(name: name) else {
                throw ValidationError(
                    "unknown symbology '\(name)'; known: \(Symbology.allCases.map(\.commandLineName).joined(separator: ","))"
                )
            }
            set.insert(symbology)
        }
        if set.isEmpty { throw ValidationError("--symbologies needs at least one name") }
        return SymbologyList(set: set)
    }
}

/// `--region X,Y,WIDTH,HEIGHT`
enum RegionArgument {
    static func parse(_ argument: String) throws -> PixelRect {
        let parts = argument.split(separator: ",").map {
            Int($0.trimmingCharacters(in: .whitespaces))
        }
        guard parts.count == 4, let x = parts[0], let y = parts[1], let w = parts[2],
            let h = parts[3],
            x >= 0, y >= 0, w > 0, h > 0
        else {
            throw ValidationError(
                "--region wants X,Y,WIDTH,HEIGHT with a positive width and height"
            )
        }
        return PixelRect(x: x, y: y, width: w, height: h)
    }
}
