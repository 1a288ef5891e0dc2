import Foundation
public import ScannerBarcodes
import ScannerImages
public import ScannerText

/// One line of `scan --format jsonl`: what was read from one input, or from one frame of a
/// multi-frame image (`scan` encodes it with sorted keys):
///
/// ```json
/// {"error": null, "file": "a.tif", "frame": 1, "lines": [...], "matches": [...],
///  "symbols": [{"bytesBase64", "engine", "format", "gs1", "points", "symbologyIdentifier",
///  "text"}], "text": "...", "textError": "..."}
/// ```
///
/// `frame` only for images with several frames; `text`, `lines` and `matches` only when text
/// was asked for, `textError` only when recognition failed; `error` always (null when the
/// input was read). Decoding reads the same shape back.
public struct ScanReport: Sendable, Codable, Equatable {
    /// One symbol.
    public struct Symbol: Sendable, Codable, Equatable {
        /// The symbology's name, as ``Symbology/rawValue`` (`QRCode`, `EAN13`, ...).
        public var format: String
        /// The payload as text.
        public var text: String
        /// The payload's bytes, base64.
        public var bytesBase64: String
        /// The corners, `[x, y]` each.
        public var points: [[Int]]
        /// `zxing`, `zbar` or `templates` (blurred EAN and UPC bars fitted).
        public var engine: String
        /// The ISO/IEC 15424 identifier, such as `]Q1`.
        public var symbologyIdentifier: String
        /// Whether the payload is a GS1 element string.
        public var gs1: Bool

        /// The symbol of a barcode.
        public init(_ barcode: Barcode) {
            format = barcode.symbology.rawValue
            text = barcode.text
            bytesBase64 = barcode.bytes.base64EncodedString()
            points = barcode.points.map { [$0.x, $0.y] }
            engine = barcode.engine.rawValue
            symbologyIdentifier = barcode.symbologyIdentifier
            gs1 = barcode.isGS1
        }
    }

    /// One recognised line of text.
    public struct Line: Sendable, Codable, Equatable {
        /// The words, separated by single spaces.
        public var text: String
        /// Tesseract's confidence, 0 to 1, to three decimals.
        public var confidence: Double
        /// `[x, y, width, height]` in the image's pixels.
        public var box: [Int]
    }

    /// One candidate a validator accepted.
    public struct Match: Sendable, Codable, Equatable {
        /// `gtin`, `imei` or `regex`.
        public var validator: String
        /// The normalised candidate.
        public var text: String
        /// `[x, y, width, height]` in the image's pixels.
        public var box: [Int]
    }

    /// The input's name (the path as given, `-` for stdin).
    public var file: String
    /// The frame's index, for images with several frames.
    public var frame: Int?
    /// The symbols read.
    public var symbols: [Symbol]
    /// All recognised text, when text was asked for (null when recognition failed).
    public var text: String?
    /// The recognised lines, when text was asked for.
    public var lines: [Line]?
    /// The validated candidates, when text was asked for.
    public var matches: [Match]?
    /// Why recognition failed on a readable image.
    public var textError: String?
    /// Why the input could not be read, or nil.
    public var error: String?

    /// A report from what `scan` found.
    /// - Parameters:
    ///   - textRequested: whether text recognition ran (its three fields are written then).
    public init(
        file: String,
        frame: Int? = nil,
        barcodes: [Barcode],
        text: TextResult? = nil,
        textRequested: Bool = false,
        textError: String? = nil,
        error: String? = nil
    ) {
        self.file = file
        self.frame = frame
        self.symbols = barcodes.map(Symbol.init)
        if textRequested || text != nil {
            self.text = text?.text
            self.lines = (text?.lines ?? []).map {
                Line(
                    text: $0.text,
                    confidence: ($0.confidence * 1000).rounded() / 1000,
                    box: Self.box($0.box)
                )
            }
            self.matches = (text?.matches ?? []).map {
                Match(validator: $0.validator, text: $0.text, box: Self.box($0.box))
            }
        }
        self.textError = textError
        self.error = error
    }

    static func box(_ r: PixelRect) -> [Int] { [r.x, r.y, r.width, r.height] }

    private enum CodingKeys: String, CodingKey {
        case file, frame, symbols, text, lines, matches, textError, error
    }

    /// Writes the fields that apply; `error` is always present.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(file, forKey: .file)
        try container.encodeIfPresent(frame, forKey: .frame)
        try container.encode(symbols, forKey: .symbols)
        if let lines {
            try container.encode(text, forKey: .text)
            try container.encode(lines, forKey: .lines)
            try container.encode(matches ?? [], forKey: .matches)
        }
        try container.encodeIfPresent(textError, forKey: .textError)
        try container.encode(error, forKey: .error)
    }

    /// Reads a line back.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        file = try container.decode(String.self, forKey: .file)
        frame = try container.decodeIfPresent(Int.self, forKey: .frame)
        symbols = try container.decode([Symbol].self, forKey: .symbols)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        lines = try container.decodeIfPresent([Line].self, forKey: .lines)
        matches = try container.decodeIfPresent([Match].self, forKey: .matches)
        textError = try container.decodeIfPresent(String.self, forKey: .textError)
        error = try container.decodeIfPresent(String.self, forKey: .error)
    }
}
