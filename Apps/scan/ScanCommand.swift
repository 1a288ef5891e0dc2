import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Models
import Plumbing
import Scanner

/// `scan`: barcodes from image files, like zbarimg, with ZXing's symbologies as well.
@main
struct ScanCommand: SuiteCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Read barcodes (QR, DataMatrix, PDF417, EAN/UPC, Code 128, ...) from images.",
        discussion: """
            Reads PNG, JPEG, WebP, TIFF, GIF, PNM and BMP files with libzbar and ZXing-C++ and \
            prints every distinct symbol. `-` reads one image from stdin; directories are \
            scanned with --recursive (paths it cannot scan are reported). Every page of a TIFF \
            and every frame of a GIF is scanned (jsonl gives each its "frame" index).

            Memory: an input's size and its header's pixel count are checked before it is \
            read; --jobs share one --memory-budget, so more jobs never multiply the peak.

            Capacity: by default --jobs and --memory-budget follow what this process may \
            really use (its CPU affinity, its cgroup's CPU quota and memory limit, v1 or v2; \
            --verbose says what was chosen). A batch of more inputs than jobs runs fewer jobs \
            while the kernel reports pressure (/proc/pressure: CPU some avg10 at least 80%: \
            half; memory at least 10%: one), says so once on stderr, and speeds up again \
            when it clears.

            Formats: text (zbarimg style, `QR-Code:payload`), jsonl (one JSON object per input \
            or frame, keys sorted: error, file, frame, symbols with bytesBase64, engine, format, \
            gs1, points, symbologyIdentifier, text), csv (file,format,text).

            Exit status: 0 every input had a symbol; 4 some readable input had none; 1 an input \
            could not be read or output could not be written (the others are still scanned; 1 \
            wins over 4); 64 usage; 130/143 stopped by SIGINT/SIGTERM (whole lines kept); 141 \
            stdout closed.

            Examples:
              scan label.png
              scan --format jsonl --symbologies qr,datamatrix photos/*.jpg
              scan --recursive --jobs 2 --quiet shelf/ > codes.txt
              curl -s https://example.com/code.png | scan -
              scan --text --validate imei --format jsonl box.png     # text, lines, matches
              scan --text --barcodes --annotate checked/ photos/*.jpg  # what was read
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

    @Option(
        name: .shortAndLong,
        help:
            "Images decoded in parallel, 1-256 (default: the CPUs this process may use, bounded by its cgroup's CPU quota and memory limit)."
    )
    var jobs: Int?

    @Flag(name: .shortAndLong, help: "Scan directories and their subdirectories.")
    var recursive = false

    @Option(name: .long, help: "Stop after this many symbols per image (1-100000).")
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

    @Option(
        name: .long,
        help: "Refuse images with more megapixels than this (1-2000), before decoding."
    )
    var maxMegapixels: Int = 100

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Memory all jobs' images may take at once, in MiB (64-1048576; default 1024, or half the cgroup's memory limit if smaller); a larger image runs alone.",
            valueName: "MiB"
        )
    )
    var memoryBudget: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write a picture of what was read for each input into DIR (<name>.annotated.png): symbol outlines with their text, OCR line boxes with text and confidence.",
            valueName: "DIR"
        )
    )
    var annotate: String?

    @OptionGroup(title: "Text recognition (OCR)") var textMode: TextModeOptions

    @OptionGroup var common: CommonOptions

    mutating func validate() throws {
        if inputs.isEmpty { throw ValidationError("give at least one image file, directory or -") }
        if let jobs, !(1...256).contains(jobs) {
            throw ValidationError("--jobs must be between 1 and 256")
        }
        if let maxSymbols, !(1...100_000).contains(maxSymbols) {
            throw ValidationError("--max-symbols must be between 1 and 100000")
        }
        if !(1...2_000).contains(maxMegapixels) {
            throw ValidationError("--max-megapixels must be between 1 and 2000")
        }
        if let memoryBudget, !(64...1_048_576).contains(memoryBudget) {
            throw ValidationError("--memory-budget must be between 64 and 1048576 MiB")
        }
        if inputs.filter({ $0 == "-" }).count > 1 {
            throw ValidationError("stdin (-) can be read only once")
        }
        if common.json { format = .jsonl }
        if annotate?.isEmpty == true { throw ValidationError("--annotate needs a directory") }
    }

    /// The suite's entry point, after `--text`'s one re-execution with OpenMP limited.
    static func main() async {
        OpenMPEnvironment.ensureSingleThreaded()
        await CommandMain.run(Self.self)
    }

    func run() async throws {
        let logger = common.makeLogger(label: "shopfloor.scan")
        let options = BarcodeScanOptions(
            symbologies: symbologies?.set ?? Set(Symbology.allCases),
            regionOfInterest: region,
            effort: effort.effort,
            searchesRotations: !noRotations,
            searchesInverted: !noInverted,
            maximumSymbols: maxSymbols
        )
        let collected = InputCollection(inputs, recursive: recursive)
        var sawUnreadable = !collected.skipped.isEmpty
        for skipped in collected.skipped {
            Console.error(
                skipped.reason == .directory
                    ? "\(TerminalText.escaped(skipped.path)): is a directory (use --recursive to scan the images in it)"
                    : skipped.description
            )
        }

        let textReader = try textMode.makeReader(region: region, logger: logger)
        var annotation: AnnotationOutput?
        if let annotate {
            do throws(AnnotationSetupError) {
                annotation = try AnnotationOutput.prepare(annotate, inputs: collected.inputs)
            } catch {
                Console.error(error.message)
                throw ExitStatus.failure.exitCode
            }
        }
        let capacity = ScanCapacity(
            jobs: jobs,
            memoryBudgetMiB: memoryBudget,
            capacity: MachineCapacity.current(),
            logger: logger
        )
        let scanner = FileScanner(
            barcodes: textMode.readsBarcodes
                ? BarcodeReader(options: options, logger: logger) : nil,
            limits: ImageLimits(maximumPixelCount: maxMegapixels * 1_000_000),
            budget: MemoryBudget(capacity: capacity.memoryBudget),
            text: textReader,
            annotation: annotation
        )
        let writer = RecordWriter(format: format)
        let progress = ProgressLine(
            noun: "files",
            enabled: !common.quiet && Console.stderrIsTerminal,
            minimumTotal: 10
        )
        var sawEmpty = false
        var symbolCount = 0
        let started = ContinuousClock.now

        try writer.begin()
        let items = collected.inputs
        let stream = ImageBatch.process(
            count: items.count,
            jobs: capacity.jobs,
            throttle: capacity.throttle(count: items.count, quiet: common.quiet, progress: progress)
        ) { index in
            scanner.scan(items[index], index: index)
        }
        // A stop signal cancels this task: the loop ends at once, abandoning the images in
        // progress, and the whole records already made are written.
        for await records in stream {
            for record in records {
                try writer.write(record)
                if let error = record.error {
                    sawUnreadable = true
                    progress.clear()
                    Console.error(TerminalText.escaped(error.description))
                } else if let error = record.textError {
                    sawUnreadable = true
                    progress.clear()
                    Console.error(TerminalText.escaped(error.description))
                } else if record.isEmpty {
                    sawEmpty = true
                }
                if let error = record.annotationError {
                    sawUnreadable = true
                    progress.clear()
                    Console.error(TerminalText.escaped(error))
                }
                symbolCount += record.symbols.count
            }
            progress.step(total: items.count)
        }
        try writer.end()
        progress.finish()
        if StopSignal.received != nil {
            if !common.quiet { Console.note("scan: interrupted") }
            return
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
        let bound = Int(Int32.max)
        guard parts.count == 4, let x = parts[0], let y = parts[1], let w = parts[2],
            let h = parts[3],
            (0...bound).contains(x), (0...bound).contains(y), (1...bound).contains(w),
            (1...bound).contains(h)
        else {
            throw ValidationError(
                "--region wants X,Y,WIDTH,HEIGHT with a positive width and height, each at most \(bound)"
            )
        }
        return PixelRect(x: x, y: y, width: w, height: h)
    }
}
