public import Foundation
public import Logging
public import ScannerImages

/// Reads barcodes with libzbar and ZXing-C++ and merges what they find.
///
/// The first passes run both engines on the grey view. When they find nothing, fallback
/// passes try what the engines skip (other binarizers, scaling, contrast, blur, 45°
/// rotations, inversion), as far as ``BarcodeScanOptions/effort`` allows. Readings of linear
/// and PDF417 symbols with modules under two pixels are read again from their region scaled
/// up, and a different reading there replaces a misread (at every effort). A reader holds no
/// mutable state: one instance may scan from many threads at once.
public final class BarcodeReader: Sendable {
    /// What to look for and how hard to try.
    public let options: BarcodeScanOptions
    private let logger: Logger

    /// Creates a reader.
    public init(
        options: BarcodeScanOptions = .standard,
        logger: Logger = Logger(label: "shopfloor.scanner")
    ) {
        self.options = options
        self.logger = logger
    }

    /// The version of ZXing-C++ linked in.
    public static var zxingVersion: String { ZXingEngine.version }

    /// Every distinct symbol in `image`, in reading order (top to bottom, left to right).
    public func scan(_ image: ImageBuffer) -> [Barcode] {
        var grey = image.greyscale()
        var base = PointTransform.identity
        if let roi = options.regionOfInterest {
            guard let cropped = grey.cropped(to: roi) else { return [] }
            grey = cropped
            base = .translation(Double(max(0, roi.x)), Double(max(0, roi.y)))
        }
        var merger = Merger(limit: options.maximumSymbols)
        if options.effort == .fast {
            scanFast(grey, base, into: &merger)
        } else {
            var search = RegionSearch(
                grey: grey,
                base: base,
                options: options,
                logger: logger
            )
            search.run(into: &merger)
        }
        let checkStarted = ContinuousClock.now
        let checked = SmallSymbolCheck.check(
            merger.sorted(),
            in: grey,
            origin: ImagePoint(x: Int(base.tx), y: Int(base.ty)),
            options: options
        )
        logger.debug(
            "scanner pass",
            metadata: RegionSearch.metadata("small symbol check", checked.count, checkStarted)
        )
        return Merger.inReadingOrder(checked)
    }

    /// ZXing's quick search over the whole image, then zbar when that finds nothing.
    private func scanFast(_ grey: ImageBuffer, _ base: PointTransform, into merger: inout Merger) {
        var quick = ZXingEngine.Pass(searching: options)
        quick.tryHarder = false
        let started = ContinuousClock.now
        merger.add(
            ZXingEngine.read(
                grey,
                symbologies: options.symbologies,
                pass: quick,
                maximumSymbols: options.maximumSymbols,
                transform: base
            ) ?? []
        )
        logger.debug(
            "scanner pass",
            metadata: RegionSearch.metadata("zxing", merger.count, started)
        )
        guard merger.isEmpty, ZBarEngine.supports(any: options.symbologies) else { return }
        merger.add(ZBarEngine.read(grey, symbologies: options.symbologies, transform: base))
        logger.debug("scanner pass", metadata: RegionSearch.metadata("zbar", merger.count, started))
    }

    /// Decodes and scans the image at `url`.
    /// - Throws: ``ImageError`` when the file cannot be read or decoded.
    public func scan(contentsOf url: URL, limits: ImageLimits = .default) throws(ImageError)
        -> [Barcode]
    {
        scan(try ImageBuffer(contentsOf: url, limits: limits))
    }

    /// Decodes and scans an encoded image held in memory.
    /// - Throws: ``ImageError`` when the data cannot be decoded.
    public func scan(data: Data, name: String = "data", limits: ImageLimits = .default)
        throws(ImageError)
        -> [Barcode]
    {
        scan(try ImageBuffer(data: data, name: name, limits: limits))
    }
}

/// Merges readings from several engines and passes into distinct symbols.
struct Merger {
    private(set) var items: [Barcode] = []
    let limit: Int?

    init(limit: Int?) { self.limit = limit }

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var isFull: Bool { limit.map { items.count >= $0 } ?? false }

    mutating func add(_ found: [Barcode]) {
        for barcode in found where Self.isPlausible(barcode) {
            if isFull { return }
            if let i = items.firstIndex(where: { Self.sameSymbol($0, barcode) }) {
                // Keep the first reading (ZXing runs first: it decodes ECI and character sets).
                if items[i].points.isEmpty, !barcode.points.isEmpty {
                    items[i].points = barcode.points
                }
                continue
            }
            items.append(barcode)
        }
    }

    /// Same symbology and payload; or the same symbology at the same place (one engine misread).
    static func sameSymbol(_ a: Barcode, _ b: Barcode) -> Bool {
        guard a.symbology == b.symbology || (a.symbology.isEAN && b.symbology.isEAN) else {
            return false
        }
        if a.bytes == b.bytes || a.text == b.text { return true }
        return overlap(a.boundingBox, b.boundingBox) > 0.5
    }

    /// Intersection over the larger box: a small symbol nested in a large one is another
    /// symbol; two readings of one place are one.
    static func overlap(_ a: PixelRect, _ b: PixelRect) -> Double {
        let inter = Double(a.intersectionArea(with: b))
        guard inter > 0 else { return 0 }
        let larger = Double(max(1, max(a.width * a.height, b.width * b.height)))
        return inter / larger
    }

    /// ITF has neither a check digit nor a fixed length, so a row crossing part of a symbol
    /// (at an angle, or cut by glare) decodes as a shorter valid ITF ("1234" from
    /// "12345678"). Readings under 6 digits are refused, as ZXing's Java reader and zbar do
    /// by default.
    static let shortestITF = 6

    static func isPlausible(_ code: Barcode) -> Bool {
        code.symbology != .itf || code.text.count >= shortestITF
    }

    /// Whether `part` is an ITF whose digits are part of the longer ITF `whole`.
    static func isPartOfITF(_ part: Barcode, _ whole: Barcode) -> Bool {
        part.symbology == .itf && whole.symbology == .itf && whole.text.count > part.text.count
            && whole.text.contains(part.text)
    }

    /// The readings in reading order, without an ITF whose digits are part of a longer ITF
    /// read over the same bars (the same partial row, long enough to pass the length check).
    func sorted() -> [Barcode] {
        let kept = items.filter { code in
            !items.contains { other in
                Self.isPartOfITF(code, other)
                    && RegionSearch.barsBox(code).intersectionArea(
                        with: RegionSearch.barsBox(other)
                    ) > 0
            }
        }
        return Self.inReadingOrder(kept)
    }

    /// `codes` top to bottom (rows 10 px apart), then left to right.
    static func inReadingOrder(_ codes: [Barcode]) -> [Barcode] {
        codes.sorted { a, b in
            let ra = a.boundingBox
            let rb = b.boundingBox
            if abs(ra.y - rb.y) > 10 { return ra.y < rb.y }
            return ra.x < rb.x
        }
    }
}

extension Symbology {
    var isEAN: Bool { self == .ean13 || self == .upcA }
}
