import Foundation
import ScannerImages

/// Finds the tessdata directory holding every requested language.
///
/// Order: the configured path, `$TESSDATA_PREFIX` (and its `tessdata` subdirectory),
/// Debian's `/usr/share/tesseract-ocr/5/tessdata` (and `4.00`), `/usr/share/tessdata`,
/// `/usr/local/share/tessdata`. The first directory with all the languages wins.
public enum TessdataLocator {
    /// The directories searched, in order, for a configured path (may be nil).
    public static func searchPath(configured: String?) -> [String] {
        var dirs: [String] = []
        if let configured, !configured.isEmpty { dirs.append(configured) }
        if let prefix = ProcessInfo.processInfo.environment["TESSDATA_PREFIX"], !prefix.isEmpty {
            dirs.append(prefix)
            dirs.append((prefix as NSString).appendingPathComponent("tessdata"))
        }
        dirs += [
            "/usr/share/tesseract-ocr/5/tessdata",
            "/usr/share/tesseract-ocr/4.00/tessdata",
            "/usr/share/tessdata",
            "/usr/local/share/tessdata",
        ]
        var seen = Set<String>()
        return dirs.filter { seen.insert($0).inserted }
    }

    /// The directory holding `<lang>.traineddata` for every language, or a
    /// ``OCRError/Code/missingLanguage`` error naming the languages and where it looked.
    public static func locate(languages: [String], configured: String?) throws(OCRError) -> String {
        guard !languages.isEmpty else {
            throw OCRError(code: .invalidOptions, input: "options", message: "no language given")
        }
        for language in languages {
            let valid =
                !language.isEmpty
                && language.allSatisfy {
                    $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-")
                }
            guard valid else {
                throw OCRError(
                    code: .invalidOptions,
                    input: "options",
                    message: "invalid language code '\(language)' (expected e.g. eng or eng+deu)"
                )
            }
        }
        let dirs = searchPath(configured: configured)
        let fm = FileManager.default
        for dir in dirs
        where languages.allSatisfy({ fm.isReadableFile(atPath: "\(dir)/\($0).traineddata") }) {
            return dir
        }
        let missing = languages.filter { language in
            !dirs.contains { fm.isReadableFile(atPath: "\($0)/\(language).traineddata") }
        }
        let names = (missing.isEmpty ? languages : missing).joined(separator: "+")
        throw OCRError(
            code: .missingLanguage,
            input: "options",
            message:
                "no tessdata directory has \(names)\(missing.isEmpty ? " together with the other languages" : "")"
                + " (install tesseract-ocr-<lang> or set TESSDATA_PREFIX)",
            cause: "looked in " + dirs.joined(separator: ", ")
        )
    }
}
