public import ScannerImages

/// One recognised word.
public struct RecognizedWord: Sendable, Hashable, Codable {
    /// The word's text (UTF-8 from Tesseract).
    public var text: String
    /// Tesseract's confidence, 0 to 1.
    public var confidence: Double
    /// Bounding box in the original image's pixels.
    public var box: PixelRect

    /// Creates a word.
    public init(text: String, confidence: Double, box: PixelRect) {
        self.text = text
        self.confidence = confidence
        self.box = box
    }
}

/// One recognised line of text.
public struct RecognizedLine: Sendable, Hashable, Codable {
    /// The words, separated by single spaces.
    public var text: String
    /// Tesseract's line confidence, 0 to 1.
    public var confidence: Double
    /// Bounding box in the original image's pixels.
    public var box: PixelRect
    /// The line's words, left to right.
    public var words: [RecognizedWord]

    /// Creates a line.
    public init(text: String, confidence: Double, box: PixelRect, words: [RecognizedWord]) {
        self.text = text
        self.confidence = confidence
        self.box = box
        self.words = words
    }
}

/// A candidate accepted by a ``TextValidator``.
public struct TextMatch: Sendable, Hashable, Codable {
    /// The validator's ``TextValidator/name``: `gtin`, `imei` or `regex`.
    public var validator: String
    /// The normalised candidate (separators removed for GTIN and IMEI).
    public var text: String
    /// The box of the words the candidate came from, in the original image's pixels.
    public var box: PixelRect

    /// Creates a match.
    public init(validator: String, text: String, box: PixelRect) {
        self.validator = validator
        self.text = text
        self.box = box
    }
}

/// Everything recognised in one image.
public struct TextResult: Sendable, Hashable, Codable {
    /// Lines in reading order.
    public var lines: [RecognizedLine]
    /// Candidates accepted by the options' validators (empty without validators).
    public var matches: [TextMatch]
    /// The scale factor applied before recognition (1 when the text was large enough).
    public var scale: Double
    /// The rotation straightened before recognition, in degrees (0 unless the accurate work
    /// ran and found a rotation).
    public var deskewDegrees: Double
    /// How many Tesseract recognition passes the image took: 1 for ``OCRScanOptions/Level/fast``
    /// and for an ``OCRScanOptions/Level/auto`` read that was sure after its first pass.
    public var passes: Int

    /// Creates a result.
    public init(
        lines: [RecognizedLine],
        matches: [TextMatch],
        scale: Double,
        deskewDegrees: Double,
        passes: Int = 1
    ) {
        self.lines = lines
        self.matches = matches
        self.scale = scale
        self.deskewDegrees = deskewDegrees
        self.passes = passes
    }

    /// The full text: lines joined by `\n`.
    public var text: String { lines.map(\.text).joined(separator: "\n") }

    /// No text at all.
    public var isEmpty: Bool { lines.isEmpty }
}
