import ClientCommands
import Models
import SuiteClient

/// Reads product codes from an image with the suite's `scan` tool (``ScannedImage``).
enum ProductCodes {
    /// The first GTIN found, the symbol it came from, and any other GTINs in the image.
    struct Found {
        var gtin: GTIN
        var format: String
        var text: String
        var others: [GTIN]
    }

    /// The GTINs in the image `file`, in the order `scan` reports the symbols.
    /// - Throws: ``SuiteClientError``: `unreadableInput` (no such file, not an image, no
    ///   product code in it), `storage` (`scan` is missing or failed).
    static func read(_ file: String, timeout: Duration) throws(SuiteClientError) -> Found {
        let scanned = try ScannedImage(file: file, timeout: timeout)
        var found: [(gtin: GTIN, format: String, text: String)] = []
        for symbol in scanned.symbols {
            if let gtin = ProductReference.gtin(
                inSymbol: symbol.text,
                format: symbol.format,
                isGS1: symbol.gs1
            ) {
                found.append((gtin, symbol.format, symbol.text))
            }
        }
        guard let first = found.first else {
            throw scanned.nothingFound(in: file, wanted: "product code (GTIN)")
        }
        var others: [GTIN] = []
        for item in found.dropFirst() where item.gtin != first.gtin && !others.contains(item.gtin) {
            others.append(item.gtin)
        }
        return Found(gtin: first.gtin, format: first.format, text: first.text, others: others)
    }
}
