import Foundation
import Scanner

/// What `scan` reports for one input, or one frame of a multi-frame image. Barcodes
/// always; the `--text` mode adds recognised text as further optional fields.
struct ScanRecord: Sendable {
    var file: String
    /// The frame's index in a multi-frame image (TIFF pages, GIF frames); nil for one frame.
    var frame: Int? = nil
    var symbols: [Barcode]
    var error: ImageError?
    /// `--text`: what was recognised (nil when text was not asked for). See TextMode.swift.
    var text: TextResult? = nil
    /// `--text`: why recognition failed for this readable image.
    var textError: OCRError? = nil
    /// `--text --validate`: only matches count as text found.
    var textValidated = false
    /// `--annotate`: why the picture of this input could not be written.
    var annotationError: String? = nil

    /// Readable, but nothing found.
    var isEmpty: Bool { error == nil && symbols.isEmpty && !hasText }
}

/// The per-input work of `scan`: decode each frame once, within the batch's memory budget,
/// then run each reader asked for on its pixels.
struct FileScanner: Sendable {
    var barcodes: BarcodeReader?
    var limits: ImageLimits
    var budget: MemoryBudget
    /// `--text`: recognition on the same pixels.
    var text: TextReader? = nil
    /// `--annotate DIR`: a picture of what was read, per frame.
    var annotation: AnnotationOutput? = nil

    /// Scans input `index` of the batch (the index names its `--annotate` picture).
    func scan(_ input: ScanInput, index: Int) -> [ScanRecord] {
        var records: [ScanRecord] = []
        input.forEachFrame(limits: limits, budget: budget) { result in
            switch result {
            case .success(let frame):
                var record = ScanRecord(
                    file: input.name,
                    frame: frame.count > 1 ? frame.index : nil,
                    symbols: barcodes?.scan(frame.image) ?? [],
                    error: nil
                )
                if let text { record.addText(from: frame.image, reader: text) }
                if let annotation {
                    record.annotationError = annotation.write(
                        frame.image,
                        record: record,
                        input: index,
                        frame: record.frame
                    )
                }
                records.append(record)
            case .failure(let error):
                records.append(
                    ScanRecord(
                        file: input.name,
                        frame: records.isEmpty ? nil : records.count,
                        symbols: [],
                        error: error
                    )
                )
            }
        }
        return records
    }
}
