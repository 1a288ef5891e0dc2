internal import CZXingShim
import Foundation
import ScannerImages

/// ZXing-C++ 3.1.1 through the C shim. Reading is thread-safe: every call builds its own
/// reader options and image view.
enum ZXingEngine {
    private static let bits: [(Symbology, UInt32)] = [
        (.qrCode, UInt32(SFZ_QR)), (.microQRCode, UInt32(SFZ_MICRO_QR)),
        (.dataMatrix, UInt32(SFZ_DATA_MATRIX)),
        (.pdf417, UInt32(SFZ_PDF417)), (.ean13, UInt32(SFZ_EAN13)), (.ean8, UInt32(SFZ_EAN8)),
        (.upcA, UInt32(SFZ_UPCA)), (.upcE, UInt32(SFZ_UPCE)), (.code128, UInt32(SFZ_CODE128)),
        (.code39, UInt32(SFZ_CODE39)), (.code93, UInt32(SFZ_CODE93)), (.itf, UInt32(SFZ_ITF)),
        (.codabar, UInt32(SFZ_CODABAR)), (.aztec, UInt32(SFZ_AZTEC)),
        (.dataBar, UInt32(SFZ_DATABAR)), (.maxiCode, UInt32(SFZ_MAXICODE)),
    ]

    /// The binarizer for one pass.
    enum Binarizer {
        case localAverage, globalHistogram, fixedThreshold
    }

    /// Settings of one ZXing pass.
    struct Pass {
        var tryHarder = true
        var tryRotate = true
        var tryInvert = true
        var tryDownscale = true
        var binarizer = Binarizer.localAverage
        var isPure = false
        /// Also report symbols located but not decoded (``Reading/located``).
        var returnsErrors = false

        /// The defaults, with the rotated and inverted retries `options` asks for.
        init(searching options: BarcodeScanOptions) {
            tryRotate = options.searchesRotations
            tryInvert = options.searchesInverted
        }

        init() {}
    }

    static var version: String { String(cString: sfz_version()) }

    /// Reads `grey` (format `.grey`). Failures of the engine are reported as `nil`.
    static func read(
        _ grey: ImageBuffer,
        symbologies: Set<Symbology>,
        pass: Pass,
        maximumSymbols: Int?,
        transform: PointTransform
    ) -> [Barcode]? {
        readAll(
            grey,
            region: nil,
            symbologies: symbologies,
            pass: pass,
            maximumSymbols: maximumSymbols,
            transform: transform
        )?.decoded
    }

    /// A symbol ZXing located but could not decode (a checksum or format error): where to
    /// try harder.
    struct Located: Sendable {
        var symbology: Symbology
        var points: [ImagePoint]
    }

    /// What one ZXing pass gives: decoded symbols, and with `pass.returnsErrors` the symbols
    /// located but not decoded.
    struct Reading: Sendable {
        var decoded: [Barcode] = []
        var located: [Located] = []
    }

    /// Reads `region` of `grey` (the whole image when nil) in place, without copying:
    /// ZXing takes the rows with their stride. Points come back in `grey`'s coordinates,
    /// then through `transform`. Failures of the engine are reported as `nil`.
    static func readAll(
        _ grey: ImageBuffer,
        region: PixelRect?,
        symbologies: Set<Symbology>,
        pass: Pass,
        maximumSymbols: Int?,
        transform: PointTransform
    ) -> Reading? {
        var mask: UInt32 = 0
        for (symbology, bit) in bits where symbologies.contains(symbology) { mask |= bit }
        guard mask != 0 else { return Reading() }
        var (x0, y0, width, height) = (0, 0, grey.width, grey.height)
        if let region {
            guard let inside = region.clipped(toWidth: grey.width, height: grey.height) else {
                return Reading()
            }
            (x0, y0, width, height) = (inside.x, inside.y, inside.width, inside.height)
        }
        var options = sfz_options()
        options.formats = mask
        options.try_harder = pass.tryHarder ? 1 : 0
        options.try_rotate = pass.tryRotate ? 1 : 0
        options.try_invert = pass.tryInvert ? 1 : 0
        options.try_downscale = pass.tryDownscale ? 1 : 0
        options.binarizer =
            switch pass.binarizer {
            case .localAverage: Int32(SFZ_BIN_LOCAL_AVERAGE)
            case .globalHistogram: Int32(SFZ_BIN_GLOBAL_HISTOGRAM)
            case .fixedThreshold: Int32(SFZ_BIN_FIXED_THRESHOLD)
            }
        options.is_pure = pass.isPure ? 1 : 0
        options.max_symbols = Int32(min(maximumSymbols ?? 0, 255))
        options.return_errors = pass.returnsErrors ? 1 : 0
        var symbols: UnsafeMutablePointer<sfz_symbol>?
        var count: Int32 = 0
        var message = [CChar](repeating: 0, count: 200)
        let offset = y0 * grey.stride + x0
        let status = grey.pixels.withUnsafeBufferPointer { buffer in
            sfz_read(
                buffer.baseAddress.map { $0 + offset },
                Int32(width),
                Int32(height),
                Int32(grey.stride),
                &options,
                &symbols,
                &count,
                &message,
                message.count
            )
        }
        guard status == 0 else { return nil }
        defer { sfz_free(symbols, count) }
        let toImage = transform.after(.translation(Double(x0), Double(y0)))
        var reading = Reading()
        for i in 0..<Int(count) {
            guard let s = symbols?[i] else { continue }
            guard var symbology = bits.first(where: { $0.1 == s.format })?.0 else { continue }
            let p = s.points
            let points = [
                ImagePoint(x: Int(p.0), y: Int(p.1)), ImagePoint(x: Int(p.2), y: Int(p.3)),
                ImagePoint(x: Int(p.4), y: Int(p.5)), ImagePoint(x: Int(p.6), y: Int(p.7)),
            ].map(toImage.apply)
            guard s.is_valid != 0 else {
                reading.located.append(Located(symbology: symbology, points: points))
                continue
            }
            let bytes = s.bytes.map { Data(bytes: $0, count: Int(s.bytes_length)) } ?? Data()
            let text = s.text.map { String(cString: $0) } ?? ""
            let (normalizedSymbology, normalizedText) = RetailNormalization.normalize(
                symbology,
                text,
                asked: symbologies
            )
            symbology = normalizedSymbology
            guard symbologies.contains(symbology) else { continue }
            let payload = normalizedText == text ? bytes : Data(normalizedText.utf8)
            let finalText = normalizedText
            let identifier = withUnsafeBytes(of: s.symbology_identifier) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            let isGS1 = s.is_gs1 != 0
            reading.decoded.append(
                Barcode(
                    symbology: symbology,
                    text: finalText,
                    bytes: payload,
                    points: points,
                    engine: .zxing,
                    isGS1: isGS1,
                    symbologyIdentifier: identifier.isEmpty
                        ? SymbologyIdentifier.make(for: symbology, isGS1: isGS1) : identifier
                )
            )
        }
        return reading
    }
}
