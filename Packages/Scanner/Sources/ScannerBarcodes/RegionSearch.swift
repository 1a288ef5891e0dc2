import Foundation
import Logging
import ScannerImages

/// The balanced and thorough search: one quick ZXing pass over the whole image, then the
/// costly variants (harder search, scaling, sharpening, blur, other binarizers, rotation,
/// inversion, zbar) only on the parts of the image that deserve them: symbols ZXing located
/// but could not decode, and textured regions (``RegionFinder``) that no decoded symbol
/// covers. Each region's variants stop at the first that decodes; decoded 2D symbols are
/// searched inside for a nested one. Works in the grey image's coordinates and maps every
/// reading through `base` at the end.
struct RegionSearch {
    let grey: ImageBuffer
    /// From `grey`'s coordinates to the caller's image (a translation for a region of interest).
    let base: PointTransform
    let options: BarcodeScanOptions
    let logger: Logger
    /// Boxes of what is decoded, widened over quiet zones and printed digits, in `grey`'s
    /// coordinates: regions inside them need no further work.
    var claimed: [PixelRect] = []
    /// Every reading so far, in `grey`'s coordinates.
    var decoded: [Barcode] = []
    /// The image's edge structure (``RegionFinder``): where to search, and whether a 1D
    /// reading's place looks like bars.
    let field: RegionFinder.TensorField

    init(grey: ImageBuffer, base: PointTransform, options: BarcodeScanOptions, logger: Logger) {
        self.grey = grey
        self.base = base
        self.options = options
        self.logger = logger
        self.field = RegionFinder.TensorField(grey)
    }

    /// How many regions get the costly variants.
    var regionBudget: Int { options.effort == .thorough ? 12 : 4 }

    mutating func run(into merger: inout Merger) {
        let started = ContinuousClock.now
        var quick = zxingPass()
        quick.tryHarder = false
        quick.returnsErrors = true
        let first =
            ZXingEngine.readAll(
                grey,
                region: nil,
                symbologies: options.symbologies,
                pass: quick,
                maximumSymbols: options.maximumSymbols,
                transform: .identity
            ) ?? ZXingEngine.Reading()
        add(first.decoded, to: &merger, checked: false)
        logger.debug("scanner pass", metadata: Self.metadata("zxing", first.decoded.count, started))
        if merger.isFull { return }

        // zbar over the whole image when ZXing found nothing: its scan lines read 1D codes
        // in photos that ZXing's binarizer loses, and QR codes on textured paper.
        if merger.isEmpty, ZBarEngine.supports(any: options.symbologies) {
            let zbarStarted = ContinuousClock.now
            let found = ZBarEngine.read(
                grey,
                symbologies: options.symbologies,
                scanLines: ZBarEngine.ScanLines.half.capped(height: grey.height, width: grey.width),
                transform: .identity
            )
            add(found, to: &merger)
            logger.debug("scanner pass", metadata: Self.metadata("zbar", found.count, zbarStarted))
            if merger.isFull { return }
        }

        // A 2D symbol printed inside another (a logo-sized QR code in a QR code's middle).
        for code in first.decoded where !code.symbology.isLinear {
            let found = lookInside(code.boundingBox)
            add(found, to: &merger)
            if merger.isFull { return }
        }

        // Too faint or too small for a symbol (tiles × energy: no region below 8,600 held
        // one in the degraded set; noise and the edges of decoded symbols sit below 2,000).
        let regions = field.regions(excluding: claimed, limit: regionBudget * 3)
            .filter { Double($0.tiles) * $0.energy >= 5000 }
        // MaxiCode, which ZXing reads only upright and alone: found by its bullseye inside
        // the textured regions, read at any turn.
        if options.symbologies.contains(.maxiCode), !regions.isEmpty,
            !first.decoded.contains(where: { $0.symbology == .maxiCode })
        {
            let maxiStarted = ContinuousClock.now
            let found = MaxiCodeLocator.read(
                grey,
                within: regions.map { Self.padded($0.box, in: grey) }
            )
            add(found, to: &merger, checked: false)
            logger.debug(
                "scanner pass",
                metadata: Self.metadata("maxicode", found.count, maxiStarted)
            )
            if merger.isFull { return }
        }
        var textured = regions.map(Candidate.init(region:))
        // Symbols ZXing located come first; the textured region around one gives its extent
        // (a located PDF417 or 1D symbol may be only its start pattern or a scan line).
        var candidates: [Candidate] = []
        for located in first.located {
            var candidate = Candidate(located: located)
            // A 2D symbol's extent: every 2D symbol ZXing located over it (a QR code's finder
            // pattern alone is also "located" as a Micro QR code).
            if !located.symbology.isLinear, let own = candidate.locatedBox {
                candidate.locatedBox = first.located.filter { !$0.symbology.isLinear }
                    .map { PixelRect(bounding: $0.points) }
                    .filter { $0.intersectionArea(with: own) > 0 }
                    .reduce(own, Self.union)
            }
            // A square 2D symbol (not PDF417, whose rows are bars too) located inside bars is
            // ZXing's guess, not the bars' extent: ZXing "located" a DataMatrix among the bars
            // of a Code 39 turned by 200°, and the bars, taken in as its extent, never had
            // the linear stages. The bars stay a candidate of their own.
            let guessInBars =
                !located.symbology.isLinear && located.symbology != .pdf417
            if let i = textured.firstIndex(where: {
                $0.box.intersectionArea(with: candidate.box) > 0
                    && !(guessInBars && $0.isLinear)
            }) {
                candidate.box = Self.union(candidate.box, textured[i].box)
                if textured[i].isLinear { candidate.angle = textured[i].angle }
                textured.remove(at: i)
            }
            candidates.append(candidate)
        }
        candidates += textured
        logger.debug(
            "scanner regions",
            metadata: [
                "located":
                    "\(first.located.map { "\($0.symbology.rawValue) \(PixelRect(bounding: $0.points))" })",
                "regions":
                    "\(regions.map { "\($0.box) \($0.isLinear ? "1D" : "2D") \(Int($0.angle))° e\(Int($0.energy)) c\(String(format: "%.2f", $0.coherence))" })",
            ]
        )
        var searched = 0
        for candidate in candidates {
            if merger.isFull || searched >= regionBudget { break }
            let area = candidate.searchRect(in: grey)
            if isClaimed(candidate.box) { continue }
            searched += 1
            let stageStarted = ContinuousClock.now
            let (name, found) = cascade(candidate, area)
            logger.debug(
                "scanner region",
                metadata: Self.metadata(name, found.count, stageStarted).merging(
                    [
                        "region": "\(area)", "kind": "\(candidate.isLinear ? "1D" : "2D")",
                        "tiles": "\(candidate.tiles)", "energy": "\(Int(candidate.energy))",
                        "coh": "\(String(format: "%.2f", candidate.coherence))",
                        "before": "\(decoded.count)", "located": "\(candidate.symbology != nil)",
                    ]
                ) { a, _ in a }
            )
            add(found, to: &merger)
            if found.isEmpty {
                // Searched without result: later candidates inside it would repeat the work.
                claimed.append(area)
            }
        }
        if merger.isEmpty, max(grey.width, grey.height) <= 160 {
            smallImage(into: &merger)
        }
        if options.effort == .thorough, merger.isEmpty {
            wholeImage(into: &merger)
        }
    }

    /// An image of a few dozen pixels is a cropped symbol (too few tiles for the region
    /// search): ZXing's pure-symbol reader for 2D symbols, then the image framed in white
    /// and doubled. Cropped tight, a turned copy of a symbol the first pass reads upright
    /// can lose its finder patterns' contrast against the frame.
    mutating func smallImage(into merger: inout Merger) {
        let started = ContinuousClock.now
        var pure = zxingPass()
        pure.isPure = true
        var found =
            ZXingEngine.read(
                grey,
                symbologies: options.symbologies.filter { !$0.isLinear },
                pass: pure,
                maximumSymbols: options.maximumSymbols,
                transform: .identity
            ) ?? []
        if found.isEmpty {
            let border = max(4, max(grey.width, grey.height) / 8)
            let framed = GreyOps.framed(grey, border: border)
            let (doubled, back) = GreyOps.scaled(framed, by: 2)
            found =
                ZXingEngine.read(
                    doubled,
                    symbologies: options.symbologies,
                    pass: zxingPass(),
                    maximumSymbols: options.maximumSymbols,
                    transform: PointTransform.translation(-Double(border), -Double(border))
                        .after(back)
                ) ?? []
        }
        add(found, to: &merger)
        logger.debug("scanner pass", metadata: Self.metadata("small image", found.count, started))
    }

    /// Thorough effort, when the regions gave nothing: the whole image through the variants
    /// that find what the region analysis misses (a symbol cut by the frame, faint texture,
    /// a 45° tilt the texture measure took for another).
    mutating func wholeImage(into merger: inout Merger) {
        var harder = zxingPass()
        let variants: [(String, Set<Symbology>, ZXingEngine.Pass, Derivation)] = [
            ("whole upscale x2", options.symbologies, harder, { g in GreyOps.scaled(g, by: 2) }),
            (
                "whole sharpen", barSymbologies, harder,
                { g in (GreyOps.sharpened(g, radius: 2, amount: 1.5), .identity) }
            ),
            (
                "whole rotate 45", options.symbologies, harder,
                { g in GreyOps.rotated(g, degrees: 45) }
            ),
            (
                "whole rotate -45", options.symbologies, harder,
                { g in GreyOps.rotated(g, degrees: -45) }
            ),
        ]
        harder.binarizer = .fixedThreshold
        let fixed: (String, Set<Symbology>, ZXingEngine.Pass, Derivation) = (
            "whole fixed threshold", options.symbologies, harder, { g in (g, .identity) }
        )
        for (name, symbologies, pass, derive) in [fixed] + variants {
            guard !symbologies.isEmpty else { continue }
            let started = ContinuousClock.now
            guard let (image, t) = derive(grey) else { continue }
            var found =
                ZXingEngine.read(
                    image,
                    symbologies: symbologies,
                    pass: pass,
                    maximumSymbols: options.maximumSymbols,
                    transform: t
                ) ?? []
            if found.isEmpty, ZBarEngine.supports(any: symbologies) {
                found = ZBarEngine.read(
                    image,
                    symbologies: symbologies,
                    transform: t,
                    surroundings: ZBarEngine.Surroundings(grey: grey)
                )
            }
            found = found.filter(liesOnBars)
            logger.debug("scanner pass", metadata: Self.metadata(name, found.count, started))
            if !found.isEmpty {
                add(found, to: &merger)
                return
            }
        }
    }

    // MARK: - Candidates

    /// A region worth the costly passes.
    struct Candidate {
        var box: PixelRect
        var isLinear: Bool
        /// Direction across the bars (degrees), for linear candidates.
        var angle: Double
        /// ZXing found its finder or guard patterns: the symbology it took it for.
        var symbology: Symbology?
        /// Where ZXing found them (the box of its points), before the texture around them
        /// widened ``box``.
        var locatedBox: PixelRect?
        /// How much of the texture runs one way (see ``CandidateRegion/coherence``).
        var coherence: Double
        /// The textured region's size in tiles and its edge energy (0 for located symbols).
        var tiles = 0
        var energy = 0.0

        init(region: CandidateRegion) {
            box = region.box
            isLinear = region.isLinear
            angle = region.angle
            coherence = region.coherence
            tiles = region.tiles
            energy = region.energy
        }

        init(located: ZXingEngine.Located) {
            box = PixelRect(bounding: located.points)
            locatedBox = box
            isLinear = located.symbology.isLinear
            symbology = located.symbology
            coherence = isLinear ? 1 : 0
            if located.points.count >= 2 {
                let a = located.points[0]
                let b = located.points[1]
                angle = atan2(Double(b.y - a.y), Double(b.x - a.x)) * 180 / .pi
            } else {
                angle = 0
            }
            // A 1D symbol's location is the scan line(s) through it: widen it to the bars.
            if isLinear {
                let grow = max(box.width, box.height) / 3
                box = PixelRect(
                    x: box.x - grow / 2,
                    y: box.y - grow,
                    width: box.width + grow,
                    height: box.height + 2 * grow
                )
            }
        }

        /// Bars within 3° of the image's rows: turned a quarter pixel for pixel
        /// (``GreyOps/quarterTurned(_:)``), not resampled by their angle.
        var barsLieAlongRows: Bool { isLinear && abs(abs(angle) - 90) <= 3 }

        /// The box with room for quiet zones, clipped to the image. Bars get more room
        /// across them: glare or blur can hide the outer bars from the texture measure.
        func searchRect(in g: ImageBuffer) -> PixelRect {
            let long = max(box.width, box.height)
            var (mx, my) = (max(12, long / 5), max(12, long / 5))
            if isLinear {
                let r = angle * .pi / 180
                mx += Int(abs(cos(r)) * Double(box.width) * 0.4)
                my += Int(abs(sin(r)) * Double(box.height) * 0.4)
            }
            let x0 = max(0, box.x - mx)
            let y0 = max(0, box.y - my)
            let x1 = min(g.width, box.x + box.width + mx)
            let y1 = min(g.height, box.y + box.height + my)
            return PixelRect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
        }
    }

    /// Whether `code` (in `grey`'s coordinates) repeats a reading already made.
    func isDecoded(_ code: Barcode) -> Bool {
        decoded.contains { Merger.sameSymbol($0, code) }
    }

    /// Whether most of `box` lies inside something already decoded or searched.
    func isClaimed(_ box: PixelRect) -> Bool {
        let area = Double(max(1, box.width * box.height))
        return claimed.contains { Double(box.intersectionArea(with: $0)) / area >= 0.6 }
    }

    /// `box` widened by a tenth of its size each way (tiles cut a symbol's edge), clipped.
    static func padded(_ box: PixelRect, in grey: ImageBuffer) -> PixelRect {
        let dx = box.width / 10 + 8
        let dy = box.height / 10 + 8
        return PixelRect(
            x: box.x - dx,
            y: box.y - dy,
            width: box.width + 2 * dx,
            height: box.height + 2 * dy
        )
        .clipped(toWidth: grey.width, height: grey.height) ?? box
    }

    static func union(_ a: PixelRect, _ b: PixelRect) -> PixelRect {
        let x0 = min(a.x, b.x)
        let y0 = min(a.y, b.y)
        return PixelRect(
            x: x0,
            y: y0,
            width: max(a.x + a.width, b.x + b.width) - x0,
            height: max(a.y + a.height, b.y + b.height) - y0
        )
    }

    // MARK: - Results

    /// Whether a 1D reading from a fallback pass lies on bars: over its place the edges run
    /// one way. A decoder driven hard enough (scaled, sharpened, zbar on every line) can
    /// find a valid EAN, ITF or DataBar in wood grain or sensor noise; bars there are not.
    func liesOnBars(_ code: Barcode) -> Bool {
        guard code.symbology.isLinear else { return true }
        guard let coherence = field.coherence(in: Self.barsBox(code)) else { return true }
        return coherence >= 0.3
    }

    /// Whether a 1D reading lies over most of the bars of a 1D symbol already decoded with
    /// other contents: two payloads from the same bars cannot both be right, and the later
    /// one comes from a fallback pass (a row crossing a symbol cut at the image's edge read
    /// as another EAN-13 that passed its check digit). The first reading stands, unless the
    /// merge refuses it anyway: an ITF too short to report, or part of the later one (the
    /// first pass read "1234" across an ITF at 45°, which hid "12345678" and left nothing).
    func contradictsDecoded(_ code: Barcode) -> Bool {
        guard code.symbology.isLinear else { return false }
        let box = Self.barsBox(code)
        return decoded.contains { other in
            guard other.symbology.isLinear, other.bytes != code.bytes,
                Merger.isPlausible(other), !Merger.isPartOfITF(other, code)
            else { return false }
            let theirs = Self.barsBox(other)
            let smaller = min(box.width * box.height, theirs.width * theirs.height)
            return smaller > 0 && box.intersectionArea(with: theirs) * 2 >= smaller
        }
    }

    /// Whether a PDF417 reading's corners make a plausible symbol: opposite sides within a
    /// factor of two of each other. A fallback pass that strings rows together wrongly can
    /// pass PDF417's error correction with text nobody printed; its corners then make a
    /// wedge (sides of 18 and 55 pixels in the misread that led here), which neither a
    /// symbol photographed at an angle nor one on a curved label makes.
    static func hasPlausibleShape(_ code: Barcode) -> Bool {
        guard code.symbology == .pdf417, code.points.count == 4 else { return true }
        let p = code.points
        func side(_ i: Int) -> Double {
            let a = p[i]
            let b = p[(i + 1) % 4]
            return Double((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)).squareRoot()
        }
        func close(_ a: Double, _ b: Double) -> Bool { max(a, b) <= 2 * max(1, min(a, b)) }
        return close(side(0), side(2)) && close(side(1), side(3))
    }

    /// A 1D reading's place: its bounding box, or for a scan line, the line with the height
    /// of the bars around it.
    static func barsBox(_ code: Barcode) -> PixelRect {
        let box = code.boundingBox
        if box.height < box.width / 4 {
            return PixelRect(
                x: box.x,
                y: box.y - box.width / 8,
                width: box.width,
                height: box.width / 4
            )
        } else if box.width < box.height / 4 {
            return PixelRect(
                x: box.x - box.height / 8,
                y: box.y,
                width: box.height / 4,
                height: box.height
            )
        }
        return box
    }

    /// Claims the readings' places and adds them, mapped to the caller's coordinates;
    /// readings of fallback passes (`checked`) only where they lie on bars.
    mutating func add(_ found: [Barcode], to merger: inout Merger, checked: Bool = true) {
        let found =
            checked
            ? found.filter { code in
                let ok = liesOnBars(code)
                if !ok {
                    logger.debug(
                        "scanner rejected",
                        metadata: [
                            "symbology": "\(code.symbology.rawValue)", "text": "\(code.text)",
                        ]
                    )
                }
                return ok
            } : found
        for code in found {
            claimed.append(Self.widened(code))
        }
        decoded += found
        merger.add(
            found.map { code in
                var mapped = code
                mapped.points = code.points.map(base.apply)
                return mapped
            }
        )
    }

    /// Rows `y..<y + height` of `grey` across its whole width (clipped to the image), with
    /// the transform back to `grey`; nil when none of them lies in it.
    static func rowBand(_ grey: ImageBuffer, y: Int, height: Int)
        -> (ImageBuffer, PointTransform)?
    {
        guard let band = grey.cropped(to: PixelRect(x: 0, y: y, width: grey.width, height: height))
        else { return nil }
        return (band, PointTransform.translation(0, Double(max(0, y))))
    }

    /// Columns `x..<x + width` of `grey` across its whole height (clipped to the image),
    /// turned a quarter (``GreyOps/quarterTurned(_:)``) so that its rows cross bars lying
    /// along the image's rows, with the transform back to `grey`; nil when none of them lies
    /// in it.
    static func columnBand(_ grey: ImageBuffer, x: Int, width: Int)
        -> (ImageBuffer, PointTransform)?
    {
        guard
            let band = grey.cropped(to: PixelRect(x: x, y: 0, width: width, height: grey.height))
        else { return nil }
        let (turned, back) = GreyOps.quarterTurned(band)
        return (turned, PointTransform.translation(Double(max(0, x)), 0).after(back))
    }

    /// A decoded symbol's box grown over its quiet zone, and for 1D symbols (whose points
    /// may be a single scan line) over the height of its bars and printed digits.
    static func widened(_ code: Barcode) -> PixelRect {
        let box = code.boundingBox
        let long = max(box.width, box.height)
        var (gx, gy) = (long / 8, long / 8)
        if code.symbology.isLinear {
            // Along the scan line: the quiet zone. Across: the bars' height and the digits
            // (the reading may be a single scan line). A symbol printed beside it stays out.
            if box.width >= box.height {
                gy = long * 2 / 5
            } else {
                gx = long * 2 / 5
            }
        }
        return PixelRect(
            x: box.x - gx,
            y: box.y - gy,
            width: box.width + 2 * gx,
            height: box.height + 2 * gy
        )
    }

    static func metadata(_ name: String, _ found: Int, _ started: ContinuousClock.Instant)
        -> Logger.Metadata
    {
        let elapsed = ContinuousClock.now - started
        let micros =
            elapsed.components.seconds * 1_000_000
            + elapsed.components.attoseconds / 1_000_000_000_000
        return ["name": "\(name)", "found": "\(found)", "us": "\(micros)"]
    }
}
