public import Foundation
public import Logging

/// Reads barcodes with libzbar and ZXing-C++ and merges what they find.
///
/// The first passes run both engines on the grey view. When they find nothing, fallback
/// passes try what the engines skip (other binarizers, scaling, contrast, blur, 45°
/// rotations, inversion), as far as ``BarcodeScanOptions/effort`` allows. A reader holds no
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
        for (index, pass) in passes(for: grey).enumerated() {
            let started = ContinuousClock.now
            let found = pass.run(grey, options, base)
            merger.add(found)
            logger.debug(
                "scanner pass",
                metadata: [
                    "pass": "\(index)", "name": "\(pass.name)", "found": "\(found.count)",
                    "ms":
                        "\((ContinuousClock.now - started).components.attoseconds / 1_000_000_000_000_000)",
                ]
            )
            if merger.isFull { break }
            // ZXing first; zbar next only when ZXing found nothing (or when thorough), because
            // where ZXing reads a symbol zbar rarely adds one and costs as much again.
            // Fallbacks stop at the first hit.
            if !merger.isEmpty, index >= 1 || options.effort != .thorough { break }
        }
        return merger.sorted()
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

    // MARK: - Passes

    struct Pass: Sendable {
        var name: String
        var run: @Sendable (ImageBuffer, BarcodeScanOptions, PointTransform) -> [Barcode]
    }

    private func passes(for grey: ImageBuffer) -> [Pass] {
        let o = options
        var list: [Pass] = []
        var first = ZXingEngine.Pass()
        first.tryRotate = o.searchesRotations
        first.tryInvert = o.searchesInverted
        // Most symbols read without ZXing's harder search; zbar and the harder search run
        // only when that finds nothing, which keeps clean images cheap.
        var quick = first
        quick.tryHarder = false
        list.append(zxing("zxing", quick))
        list.append(zbar("zbar") { g in (g, .identity) })
        guard o.effort != .fast else { return list }
        list.append(zxing("zxing harder", first))

        // Balanced: other binarizer, then scale small images up and big ones down.
        // ZXing's global-histogram binarizer suits blurred and low-contrast 1D codes.
        var global = first
        global.binarizer = .globalHistogram
        list.append(zxing("zxing global-histogram", global, only: \.isLinear))
        // Light-on-dark 1D codes: ZXing's own inversion misses them next to printed digits.
        if o.searchesInverted {
            var plain = first
            plain.tryInvert = false
            list.append(
                both("inverted 1D", plain, only: \.isLinear, zbarToo: false) { g in
                    (GreyOps.inverted(g), .identity)
                }
            )
        }
        // Small images: modules of one or two pixels, which both engines miss.
        let shortSide = min(grey.width, grey.height)
        if shortSide < 320 {
            list.append(both("upscale x2", first) { g in GreyOps.scaled(g, by: 2) })
        }
        // Noise, print dots and textured modules: a light blur joins them (2D symbols).
        list.append(
            both("blur", first, only: { !$0.isLinear }) { g in (GreyOps.blurred(g), .identity) }
        )
        guard o.effort == .thorough else { return list }

        if shortSide >= 320, shortSide < 800 {
            list.append(both("upscale x2", first) { g in GreyOps.scaled(g, by: 2) })
        }
        if shortSide > 900 {
            list.append(both("downscale x0.5", first) { g in GreyOps.scaled(g, by: 0.5) })
        }
        // Out-of-focus 1D codes: unsharp masking restores their bar edges.
        list.append(
            both("sharpen 1D", first, only: \.isLinear) { g in
                (GreyOps.sharpened(g, radius: 2, amount: 1.5), .identity)
            }
        )
        list.append(zbar("zbar blur") { g in (GreyOps.blurred(g), .identity) })

        // Thorough: contrast, 45° rotations, inversion for zbar, fixed threshold.
        list.append(
            both("contrast", global) { g in (GreyOps.contrastStretched(g) ?? g, .identity) }
        )
        var fixed = first
        fixed.binarizer = .fixedThreshold
        list.append(zxing("zxing fixed-threshold", fixed))
        if o.searchesInverted {
            list.append(zbar("zbar inverted") { g in (GreyOps.inverted(g), .identity) })
        }
        if o.searchesRotations {
            for degrees in [45.0, -45.0] {
                list.append(
                    both("rotate \(Int(degrees))", first) { g in
                        GreyOps.rotated(g, degrees: degrees)
                    }
                )
            }
        }
        if shortSide < 600 {
            list.append(
                both("upscale x3 blur", global) { g in
                    let (up, t) = GreyOps.scaled(g, by: 3)
                    return (GreyOps.blurred(up), t)
                }
            )
        }
        return list
    }

    private func zxing(
        _ name: String,
        _ settings: ZXingEngine.Pass,
        only filter: @escaping @Sendable (Symbology) -> Bool = { _ in true }
    ) -> Pass {
        Pass(name: name) { g, o, base in
            ZXingEngine.read(
                g,
                symbologies: o.symbologies.filter(filter),
                pass: settings,
                maximumSymbols: o.maximumSymbols,
                transform: base
            ) ?? []
        }
    }

    private func zbar(
        _ name: String,
        _ derive: @escaping @Sendable (ImageBuffer) -> (ImageBuffer, PointTransform)
    )
        -> Pass
    {
        Pass(name: name) { g, o, base in
            guard ZBarEngine.supports(any: o.symbologies) else { return [] }
            let (image, t) = derive(g)
            return ZBarEngine.read(image, symbologies: o.symbologies, transform: base.after(t))
        }
    }

    private func both(
        _ name: String,
        _ settings: ZXingEngine.Pass,
        only filter: @escaping @Sendable (Symbology) -> Bool = { _ in true },
        zbarToo: Bool = true,
        _ derive: @escaping @Sendable (ImageBuffer) -> (ImageBuffer, PointTransform)
    ) -> Pass {
        Pass(name: name) { g, o, base in
            let symbologies = o.symbologies.filter(filter)
            guard !symbologies.isEmpty else { return [] }
            let (image, t) = derive(g)
            let transform = base.after(t)
            let z =
                ZXingEngine.read(
                    image,
                    symbologies: symbologies,
                    pass: settings,
                    maximumSymbols: o.maximumSymbols,
                    transform: transform
                ) ?? []
            guard zbarToo, z.isEmpty, ZBarEngine.supports(any: symbologies) else { return z }
            return ZBarEngine.read(image, symbologies: symbologies, transform: transform)
        }
    }
}

/// Merges readings from several engines and passes into distinct symbols.
struct Merger {
    private(set) var items: [Barcode] = []
    let limit: Int?

    init(limit: Int?) { self.limit = limit }

    var isEmpty: Bool { items.isEmpty }
    var isFull: Bool { limit.map { items.count >= $0 } ?? false }

    mutating func add(_ found: [Barcode]) {
        for barcode in found {
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

    static func overlap(_ a: PixelRect, _ b: PixelRect) -> Double {
        let x0 = max(a.x, b.x)
        let y0 = max(a.y, b.y)
        let x1 = min(a.x + a.width, b.x + b.width)
        let y1 = min(a.y + a.height, b.y + b.height)
        guard x1 > x0, y1 > y0 else { return 0 }
        let inter = Double((x1 - x0) * (y1 - y0))
        let smaller = Double(max(1, min(a.width * a.height, b.width * b.height)))
        return inter / smaller
    }

    func sorted() -> [Barcode] {
        items.sorted { a, b in
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
