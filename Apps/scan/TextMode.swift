import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Scanner

/// `scan --text`: OCR with Tesseract instead of barcodes, or alongside them with `--barcodes`.
struct TextModeOptions: ParsableArguments {
    @Flag(name: .long, help: "Read printed text (OCR) instead of barcodes.")
    var text = false

    @Flag(name: .long, help: "With --text: read barcodes as well.")
    var barcodes = false

    @Option(
        name: .customLong("validate"),
        help: ArgumentHelp(
            "With --text: report only candidates that pass: gtin, imei or a regular expression (repeatable).",
            valueName: "gtin|imei|REGEX"
        )
    )
    var validateSpecs: [String] = []

    @Option(
        name: .long,
        help:
            "With --text: auto (deskew, one pass, more passes only where unsure), fast (one pass) or accurate (deskew, more passes)."
    )
    var level: LevelArgument = .auto

    @Option(name: .long, help: "With --text: Tesseract languages, e.g. eng or eng+deu.")
    var lang: String = "eng"

    @Option(name: .long, help: "With --text: a tessdata directory to search first.")
    var tessdata: String?

    @Option(name: .long, help: "With --text: recognise only these characters.")
    var whitelist: String?

    @Option(name: .long, help: "With --text: drop words shorter than this many pixels.")
    var minTextHeight: Int = 0

    @Flag(name: .long, help: "With --text: do not upscale small text.")
    var noUpscale = false

    mutating func validate() throws {
        if !text {
            let textOnly: [(Bool, String)] = [
                (barcodes, "--barcodes"), (!validateSpecs.isEmpty, "--validate"),
                (tessdata != nil, "--tessdata"), (whitelist != nil, "--whitelist"),
                (noUpscale, "--no-upscale"), (minTextHeight != 0, "--min-text-height"),
            ]
            if let (_, flag) = textOnly.first(where: \.0) {
                throw ValidationError("\(flag) needs --text")
            }
        }
        if minTextHeight < 0 { throw ValidationError("--min-text-height must not be negative") }
        if lang.isEmpty { throw ValidationError("--lang needs a language, e.g. eng") }
    }

    /// Barcodes are read unless --text is given alone.
    var readsBarcodes: Bool { !text || barcodes }

    var validators: [TextValidator] {
        validateSpecs.map { v in
            switch v.lowercased() {
            case "gtin": .gtin
            case "imei": .imei
            default: .regex(v)
            }
        }
    }

    /// The reader for --text, or nil; option errors (missing language, bad expression) are
    /// usage errors (64) naming the problem.
    func makeReader(region: PixelRect?, logger: Logger) throws -> TextReader? {
        guard text else { return nil }
        let options = OCRScanOptions(
            level: level.level,
            languages: lang.split(separator: "+").map(String.init),
            tessdataPath: tessdata,
            regionOfInterest: region,
            characterWhitelist: whitelist,
            minimumTextHeight: minTextHeight,
            upscalesSmallText: !noUpscale,
            validators: validators
        )
        do throws(OCRError) {
            return try TextReader(options: options, logger: logger)
        } catch {
            Console.error("\(error.message)\(error.cause.map { " (\($0))" } ?? "")")
            throw ExitStatus.usage.exitCode
        }
    }
}

/// `--level auto|fast|accurate`
enum LevelArgument: String, ExpressibleByArgument, CaseIterable {
    case auto, fast, accurate

    var level: OCRScanOptions.Level {
        switch self {
        case .auto: .auto
        case .fast: .fast
        case .accurate: .accurate
        }
    }
}

extension ScanRecord {
    /// Text counts as found when there is some, or, with validators, when something matched.
    var hasText: Bool {
        guard let text else { return false }
        return textValidated ? !text.matches.isEmpty : !text.isEmpty
    }

    mutating func addText(from image: ImageBuffer, reader: TextReader) {
        textValidated = !reader.options.validators.isEmpty
        do throws(OCRError) {
            text = try reader.read(image, name: file)
        } catch {
            textError = error
        }
    }
}

/// Text-mode parts of the three output formats.
enum TextOutput {
    /// Text format: the recognised lines (or, with validators, `validator:text` per match).
    static func text(_ record: ScanRecord) -> String {
        guard let text = record.text else { return "" }
        if record.textValidated {
            return text.matches.map { "\($0.validator):\($0.text)\n" }.joined()
        }
        return text.lines.map { $0.text + "\n" }.joined()
    }

    /// CSV rows `file,text,<line>` (or `file,<validator>,<match>`).
    static func csv(_ record: ScanRecord) -> String {
        guard let text = record.text else { return "" }
        let file = RecordWriter.csv(record.file)
        if record.textValidated {
            return text.matches.map { "\(file),\($0.validator),\(RecordWriter.csv($0.text))\n" }
                .joined()
        }
        return text.lines.map { "\(file),text,\(RecordWriter.csv($0.text))\n" }.joined()
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// libtesseract's OpenMP reads `OMP_THREAD_LIMIT` when the process starts; `scan --text`
/// runs one engine per core, where more OpenMP threads only contend (2-3x slower on 2 cores).
/// So when `--text` is asked for and the variable is unset, `scan` sets it to 1 and
/// re-executes itself once, before reading any input. A value the user set is kept.
enum OpenMPEnvironment {
    static func ensureSingleThreaded() {
        let arguments = CommandLine.arguments
        guard arguments.contains("--text"), getenv("OMP_THREAD_LIMIT") == nil else { return }
        setenv("OMP_THREAD_LIMIT", "1", 1)
        // Keeps a stop signal pending across the exec; exec failed (no /proc): carry on.
        StopSignal.reexecute(arguments)
    }
}
