import Foundation
public import ScannerImages

/// What text recognition looks for and how hard it tries.
///
/// Debian ships one English model (LSTM "fast"), so the levels differ in preprocessing,
/// page segmentation and extra passes, not in the model:
/// - ``Level/fast``: grey, small text upscaled, one pass with automatic page segmentation.
/// - ``Level/accurate``: also straightens small rotations (up to ±5°), and when the first pass
///   is unsure, tries a single-block and a sparse-text segmentation and keeps the best.
/// - ``Level/auto`` (the default): straightened like `accurate` (measuring the skew needs no
///   recognition pass), one pass, and the accurate level's further passes only when that pass
///   is unsure (no text, a low mean confidence with a higher bar for small text, validators
///   that accept nothing): the accurate level's error rate at about the fast level's cost.
public struct OCRScanOptions: Sendable, Hashable, Codable {
    /// How much work to spend per image.
    public enum Level: String, Sendable, Hashable, Codable, CaseIterable {
        /// One pass: grey, upscaled when the text is small.
        case fast
        /// Straightened, one pass; the accurate level's further passes only when it is unsure.
        case auto
        /// Deskewed, and further segmentations when the first pass is unsure.
        case accurate
    }

    /// Recognition level.
    public var level: Level
    /// Tesseract language codes, such as `["eng"]` or `["eng", "deu"]` (`eng+deu`).
    public var languages: [String]
    /// A tessdata directory to use before the usual places (see ``TessdataLocator``).
    public var tessdataPath: String?
    /// Only this part of the image is read; boxes stay in the whole image's coordinates.
    public var regionOfInterest: PixelRect?
    /// When set, only these characters are recognised (for example `0123456789`).
    public var characterWhitelist: String?
    /// Words shorter than this many pixels (in the original image) are dropped; 0 keeps all.
    public var minimumTextHeight: Int
    /// Scales images whose text lines are short (below about 32 px) so that Tesseract sees
    /// lines of about 48 px. This is what makes small, low-resolution text readable.
    public var upscalesSmallText: Bool
    /// When not empty, only candidates accepted by one of these are reported as matches.
    public var validators: [TextValidator]

    /// Creates options; the defaults are the ``auto`` preset.
    public init(
        level: Level = .auto,
        languages: [String] = ["eng"],
        tessdataPath: String? = nil,
        regionOfInterest: PixelRect? = nil,
        characterWhitelist: String? = nil,
        minimumTextHeight: Int = 0,
        upscalesSmallText: Bool = true,
        validators: [TextValidator] = []
    ) {
        self.level = level
        self.languages = languages
        self.tessdataPath = tessdataPath
        self.regionOfInterest = regionOfInterest
        self.characterWhitelist = characterWhitelist
        self.minimumTextHeight = minimumTextHeight
        self.upscalesSmallText = upscalesSmallText
        self.validators = validators
    }

    /// The fast pass, the accurate work where it is unsure; English.
    public static let auto = OCRScanOptions()
    /// One pass, English.
    public static let fast = OCRScanOptions(level: .fast)
    /// Deskew and extra segmentations, English.
    public static let accurate = OCRScanOptions(level: .accurate)
    /// Serial numbers and codes: digits and capital letters only, accurate level.
    public static let serialNumbers = OCRScanOptions(
        level: .accurate,
        characterWhitelist: "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-/:. "
    )
    /// Printed IMEIs: digits, accurate level, validated with the Luhn check.
    public static let imei = OCRScanOptions(level: .accurate, validators: [.imei])

    /// Languages as Tesseract writes them: `eng+deu`.
    public var languageString: String { languages.joined(separator: "+") }
}

/// Accepts only well-formed candidates in recognised text.
public enum TextValidator: Sendable, Hashable, Codable {
    /// GTIN-8, -12, -13 or -14 with a correct mod-10 check digit (spaces and dashes between
    /// digit groups are allowed and removed).
    case gtin
    /// A 15-digit IMEI with a correct Luhn check digit (separators allowed and removed).
    case imei
    /// Every match of this regular expression (ICU syntax, as NSRegularExpression).
    case regex(String)

    /// `gtin`, `imei` or `regex`: the name reported with each match.
    public var name: String {
        switch self {
        case .gtin: "gtin"
        case .imei: "imei"
        case .regex: "regex"
        }
    }
}

/// Why text could not be recognised.
public struct OCRError: InputError, Equatable {
    /// What went wrong, stable for callers to switch on.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// A requested language has no `.traineddata` in any tessdata directory.
        case missingLanguage
        /// The options are invalid (an empty or malformed language, a bad regular expression,
        /// a region outside the image, a negative minimum height).
        case invalidOptions
        /// Tesseract failed to initialise or to recognise.
        case engineFailed
    }

    /// What went wrong.
    public var code: Code
    /// The input, as the caller named it, or `options`.
    public var input: String
    /// A human message naming the problem.
    public var message: String
    /// More detail, such as the directories searched.
    public var cause: String?

    /// Creates an error.
    public init(code: Code, input: String, message: String, cause: String? = nil) {
        self.code = code
        self.input = input
        self.message = message
        self.cause = cause
    }
}
