import Foundation
import Scanner

/// What `scan` reports for one input. Barcodes today; the `--text` mode adds recognised
/// text (`text`, `lines`, `matches`) as further optional fields of the same record.
struct ScanRecord: Sendable {
    var file: String
    var symbols: [Barcode]
    var error: ImageError?
    /// `--text`: what was recognised (nil when text was not asked for). See TextMode.swift.
    var text: TextResult? = nil
    /// `--text`: why recognition failed for this readable image.
    var textError: OCRError? = nil
    /// `--text --validate`: only matches count as text found.
    var textValidated = false

    /// Readable, but nothing found.
    var isEmpty: Bool { error == nil && symbols.isEmpty && !hasText }
}

/// The per-input work of `scan`: decode once, then run each reader asked for on the pixels.
struct FileScanner: Sendable {
    var barcodes: BarcodeReader?
    var limits: ImageLimits
    /// `--text`: recognition on the same pixels.
    var text: TextReader? = nil

    func scan(_ input: ScanInput) -> ScanRecord {
        do throws(ImageError) {
            let image = try input.decode(limits: limits)
            var record = ScanRecord(
                file: input.name,
                symbols: barcodes?.scan(image) ?? [],
                error: nil
            )
            if let text { record.addText(from: image, reader: text) }
            return record
        } catch {
            return ScanRecord(file: input.name, symbols: [], error: error)
        }
    }
}

/// Expands the command line's inputs: files as given, `-` as stdin, directories walked
/// with --recursive (image files only, sorted).
struct InputCollector {
    var recursive: Bool

    static let imageExtensions: Set<String> = [
        "png", "jpg", "jpeg", "webp", "tif", "tiff", "gif", "pnm", "pbm", "pgm", "ppm", "bmp",
    ]

    func collect(_ arguments: [String]) -> (inputs: [ScanInput], errors: [String]) {
        var inputs: [ScanInput] = []
        var errors: [String] = []
        let fm = FileManager.default
        for argument in arguments {
            if argument == "-" {
                let data = FileHandle.standardInput.readDataToEndOfFile()
                inputs.append(ScanInput(name: "-", source: .data(data)))
                continue
            }
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                inputs.append(
                    ScanInput(name: argument, source: .file(URL(fileURLWithPath: argument)))
                )
                continue
            }
            guard isDirectory.boolValue else {
                inputs.append(
                    ScanInput(name: argument, source: .file(URL(fileURLWithPath: argument)))
                )
                continue
            }
            guard recursive else {
                errors.append(
                    "\(argument): is a directory (use --recursive to scan the images in it)"
                )
                continue
            }
            inputs.append(contentsOf: walk(argument))
        }
        return (inputs, errors)
    }

    private func walk(_ directory: String) -> [ScanInput] {
        let base = URL(fileURLWithPath: directory)
        guard
            let enumerator = FileManager.default.enumerator(
                at: base,
                includingPropertiesForKeys: [.isRegularFileKey],
                options: [.skipsHiddenFiles]
            )
        else { return [] }
        var paths: [String] = []
        for case let url as URL in enumerator
        where Self.imageExtensions.contains(url.pathExtension.lowercased()) {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
            else { continue }
            // Name files as the user would: the directory as given plus the relative path.
            let relative =
                url.path.hasPrefix(base.path + "/")
                ? String(url.path.dropFirst(base.path.count + 1)) : url.lastPathComponent
            paths.append(
                directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
            )
        }
        return paths.sorted().map { ScanInput(name: $0, source: .file(URL(fileURLWithPath: $0))) }
    }
}
