internal import CZBar
import Foundation
import ScannerImages

/// libzbar over a grey image. One `zbar_image_scanner_t` per call: zbar's scanners keep
/// state, so none is shared between threads.
enum ZBarEngine {
    private static let types: [(Symbology, zbar_symbol_type_t)] = [
        (.qrCode, ZBAR_QRCODE), (.ean13, ZBAR_EAN13), (.ean8, ZBAR_EAN8), (.upcA, ZBAR_UPCA),
        (.upcE, ZBAR_UPCE), (.code128, ZBAR_CODE128), (.code39, ZBAR_CODE39),
        (.code93, ZBAR_CODE93),
        (.itf, ZBAR_I25), (.codabar, ZBAR_CODABAR), (.dataBar, ZBAR_DATABAR),
        (.dataBar, ZBAR_DATABAR_EXP),
    ]

    /// Whether zbar reads any of these symbologies.
    static func supports(any symbologies: Set<Symbology>) -> Bool {
        types.contains { symbologies.contains($0.0) }
    }

    /// Which scan lines zbar runs: every n-th row (across upright bars) and every n-th
    /// column (across lying bars); 0 runs none in that direction.
    struct ScanLines: Sendable {
        var rowsEvery = 1
        var columnsEvery = 1

        /// Every line both ways: zbar's default.
        static let all = ScanLines()
        /// Every second line both ways: about a quarter of the cost, a few percent fewer reads.
        static let half = ScanLines(rowsEvery: 2, columnsEvery: 2)
        /// Rows only: for upright bars.
        static let rows = ScanLines(rowsEvery: 1, columnsEvery: 0)

        /// At most about 100 lines each way: a symbol tall enough for more is crossed by
        /// plenty, and zbar's cost is per line (noise and texture make each line slow).
        func capped(height: Int, width: Int) -> ScanLines {
            ScanLines(
                rowsEvery: rowsEvery == 0 ? 0 : max(rowsEvery, height / 100),
                columnsEvery: columnsEvery == 0 ? 0 : max(columnsEvery, width / 100)
            )
        }
    }

    /// The image a derived image was made from, to look around a reading in, in the
    /// coordinates `transform` maps the derived image's points to.
    struct Surroundings {
        let grey: ImageBuffer

        /// The level at (`x`, `y`), nil outside `grey`.
        func level(x: Double, y: Double) -> Int? {
            let (column, row) = (Int(x.rounded()), Int(y.rounded()))
            guard column >= 0, row >= 0, column < grey.width, row < grey.height else {
                return nil
            }
            return Int(grey.pixels[row * grey.stride + column])
        }
    }

    /// Reads `grey` (format `.grey`), or only `region` of it; `transform` maps its points to
    /// the original image. `surroundings`, when `grey` is derived (a region's crop, turned or
    /// scaled), is the image it came from, where short EAN and UPC readings look for the
    /// bars of a longer symbol beside them (``hasBarsInQuietZone(_:pixel:)``).
    static func read(
        _ grey: ImageBuffer,
        region: PixelRect? = nil,
        symbologies: Set<Symbology>,
        scanLines: ScanLines = .all,
        transform: PointTransform = .identity,
        surroundings: Surroundings? = nil
    ) -> [Barcode] {
        guard let scanner = zbar_image_scanner_create() else { return [] }
        defer { zbar_image_scanner_destroy(scanner) }
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        var enabled = false
        for (symbology, type) in types where symbologies.contains(symbology) {
            zbar_image_scanner_set_config(scanner, type, ZBAR_CFG_ENABLE, 1)
            enabled = true
        }
        // UPC-A is asked for as such, so zbar stops calling it EAN-13; EAN-13 must stay
        // enabled for zbar to decode UPC-A at all.
        if symbologies.contains(.upcA) {
            zbar_image_scanner_set_config(scanner, ZBAR_EAN13, ZBAR_CFG_ENABLE, 1)
        }
        guard enabled else { return [] }
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_POSITION, 1)
        // zbar's "y density" spaces its horizontal scan lines, "x density" its vertical ones.
        zbar_image_scanner_set_config(
            scanner,
            ZBAR_NONE,
            ZBAR_CFG_Y_DENSITY,
            Int32(scanLines.rowsEvery)
        )
        zbar_image_scanner_set_config(
            scanner,
            ZBAR_NONE,
            ZBAR_CFG_X_DENSITY,
            Int32(scanLines.columnsEvery)
        )

        guard let image = zbar_image_create() else { return [] }
        defer { zbar_image_destroy(image) }
        var (x0, y0, width, height) = (0, 0, grey.width, grey.height)
        if let region {
            guard let inside = region.clipped(toWidth: grey.width, height: grey.height) else {
                return []
            }
            (x0, y0, width, height) = (inside.x, inside.y, inside.width, inside.height)
        }
        let contiguous: [UInt8]
        if grey.stride == width, x0 == 0, y0 == 0, height == grey.height {
            contiguous = grey.pixels
        } else {
            var packed = [UInt8]()
            packed.reserveCapacity(width * height)
            for y in y0..<(y0 + height) {
                let start = y * grey.stride + x0
                packed.append(contentsOf: grey.pixels[start..<(start + width)])
            }
            contiguous = packed
        }
        let transform = transform.after(.translation(Double(x0), Double(y0)))
        let y800: UInt = 0x3030_3859  // fourcc('Y','8','0','0')
        zbar_image_set_format(image, UInt(y800))
        zbar_image_set_size(image, UInt32(width), UInt32(height))
        var found: [Barcode] = []
        contiguous.withUnsafeBufferPointer { buffer in
            zbar_image_set_data(image, buffer.baseAddress, UInt(buffer.count), nil)
            let status = zbar_scan_image(scanner, image)
            guard status > 0 else { return }
            var symbol = zbar_image_first_symbol(image)
            func pixel(_ x: Int, _ y: Int) -> Int? {
                if let surroundings {
                    let (ox, oy) = transform.apply(x: Double(x), y: Double(y))
                    return surroundings.level(x: ox, y: oy)
                }
                guard x >= 0, y >= 0, x < width, y < height else { return nil }
                return Int(buffer[y * width + x])
            }
            while let s = symbol {
                if !hasBarsInQuietZone(s, pixel: pixel),
                    let barcode = makeBarcode(s, symbologies: symbologies, transform: transform)
                {
                    found.append(barcode)
                }
                symbol = zbar_symbol_next(s)
            }
            // zbar keeps pointers into the data until the image is reset.
            zbar_image_set_data(image, nil, 0, nil)
        }
        return found
    }

    private static func makeBarcode(
        _ s: OpaquePointer,
        symbologies: Set<Symbology>,
        transform: PointTransform
    ) -> Barcode? {
        let type = zbar_symbol_get_type(s)
        guard var symbology = types.first(where: { $0.1 == type })?.0 else { return nil }
        let length = Int(zbar_symbol_get_data_length(s))
        guard let raw = zbar_symbol_get_data(s), length > 0 else { return nil }
        var bytes = Data(bytes: raw, count: length)
        let isGS1 = (zbar_symbol_get_modifiers(s) & (1 << ZBAR_MOD_GS1.rawValue)) != 0
        if symbology.isRetail {
            let (normalizedSymbology, text) = RetailNormalization.normalize(
                symbology,
                String(decoding: bytes, as: UTF8.self),
                asked: symbologies
            )
            symbology = normalizedSymbology
            bytes = Data(text.utf8)
        }
        guard symbologies.contains(symbology) else { return nil }
        // A 1D reading on a single scan line is how zbar reports DataBar and ITF in wood
        // grain, fabric and noise: two agreeing lines are asked for (zbar counts them as the
        // symbol's quality). 2D symbols are decoded whole and have no such count.
        if symbology.isLinear, zbar_symbol_get_quality(s) < 2 { return nil }
        var points: [ImagePoint] = []
        let count = zbar_symbol_get_loc_size(s)
        var xs: [Int] = []
        var ys: [Int] = []
        for i in 0..<count {
            xs.append(Int(zbar_symbol_get_loc_x(s, i)))
            ys.append(Int(zbar_symbol_get_loc_y(s, i)))
        }
        if symbology == .qrCode, count == 4 {
            points = (0..<4).map { ImagePoint(x: xs[$0], y: ys[$0]) }
        } else if let x0 = xs.min(), let x1 = xs.max(), let y0 = ys.min(), let y1 = ys.max() {
            points = [
                ImagePoint(x: x0, y: y0), ImagePoint(x: x1, y: y0), ImagePoint(x: x1, y: y1),
                ImagePoint(x: x0, y: y1),
            ]
        }
        let text = TextDecoding.text(from: bytes)
        return Barcode(
            symbology: symbology,
            text: text,
            bytes: bytes,
            points: points.map(transform.apply),
            engine: .zbar,
            isGS1: isGS1,
            symbologyIdentifier: SymbologyIdentifier.make(for: symbology, isGS1: isGS1)
        )
    }
}

/// EAN/UPC text as GS1 transmits it (identifier `]E0`): UPC-A and UPC-E as 13 digits with
/// a leading 0 (UPC-E expanded to its UPC-A form); a leading-0 EAN-13 is a UPC-A.
enum RetailNormalization {
    static func normalize(_ symbology: Symbology, _ text: String, asked: Set<Symbology>) -> (
        Symbology, String
    ) {
        let digits = Array(text.utf8)
        guard digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return (symbology, text) }
        switch symbology {
        case .ean13 where digits.count == 13 && digits[0] == 48 && asked.contains(.upcA):
            return (.upcA, text)
        case .upcA where digits.count == 12:
            return (.upcA, "0" + text)
        case .upcE where digits.count == 8:
            return (.upcE, "0" + expandUPCE(text))
        default:
            return (symbology, text)
        }
    }

    /// The 12-digit UPC-A form of an 8-digit UPC-E (number system, six digits, check digit).
    static func expandUPCE(_ upce: String) -> String {
        let d = Array(upce)
        let ns = d[0]
        let m = Array(d[1...6])
        let check = d[7]
        let body: [Character]
        switch m[5] {
        case "0", "1", "2": body = [m[0], m[1], m[5], "0", "0", "0", "0", m[2], m[3], m[4]]
        case "3": body = [m[0], m[1], m[2], "0", "0", "0", "0", "0", m[3], m[4]]
        case "4": body = [m[0], m[1], m[2], m[3], "0", "0", "0", "0", "0", m[4]]
        default: body = [m[0], m[1], m[2], m[3], m[4], "0", "0", "0", "0", m[5]]
        }
        return String([ns] + body + [check])
    }
}

extension Symbology {
    var isRetail: Bool { self == .ean13 || self == .upcA || self == .upcE || self == .ean8 }
}

/// ISO/IEC 15424 identifiers for readings whose engine gives none.
enum SymbologyIdentifier {
    static func make(for symbology: Symbology, isGS1: Bool) -> String {
        switch symbology {
        case .qrCode: isGS1 ? "]Q3" : "]Q1"
        case .microQRCode: "]Q1"
        case .dataMatrix: isGS1 ? "]d2" : "]d1"
        case .pdf417: "]L2"
        case .aztec: isGS1 ? "]z1" : "]z0"
        case .maxiCode: "]U0"
        case .ean13, .upcA, .upcE: "]E0"
        case .ean8: "]E4"
        case .code128: isGS1 ? "]C1" : "]C0"
        case .code39: "]A0"
        case .code93: "]G0"
        case .itf: "]I0"
        case .codabar: "]F0"
        case .dataBar: "]e0"
        }
    }
}

/// Byte payloads to text when an engine gives bytes only: UTF-8 when valid, else Shift-JIS
/// when that decodes, else ISO-8859-1 (the default character set of most symbologies).
enum TextDecoding {
    static func text(from bytes: Data) -> String {
        if let utf8 = String(data: bytes, encoding: .utf8) { return utf8 }
        if let sjis = String(data: bytes, encoding: .shiftJIS) { return sjis }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }
}
