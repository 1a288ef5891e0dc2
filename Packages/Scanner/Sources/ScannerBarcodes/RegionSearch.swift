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
    private var claimed: [PixelRect] = []
    /// Every reading so far, in `grey`'s coordinates.
    private var decoded: [Barcode] = []
    /// The image's edge structure (``RegionFinder``): where to search, and whether a 1D
    /// reading's place looks like bars.
    private let field: RegionFinder.TensorField

    init(grey: ImageBuffer, base: PointTransform, options: BarcodeScanOptions, logger: Logger) {
        self.grey = grey
        self.base = base
        self.options = options
        self.logger = logger
        self.field = RegionFinder.TensorField(grey)
    }

    /// How many regions get the costly variants.
    private var regionBudget: Int { options.effort == .thorough ? 12 : 4 }

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
        var textured = regions.map(Candidate.init(region:))
        // Symbols ZXing located come first; the textured region around one gives its extent
        // (a located PDF417 or 1D symbol may be only its start pattern or a scan line).
        var candidates: [Candidate] = []
        for located in first.located {
            var candidate = Candidate(located: located)
            if let i = textured.firstIndex(where: {
                $0.box.intersectionArea(with: candidate.box) > 0
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
                "located": "\(first.located.count)",
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
    private mutating func smallImage(into merger: inout Merger) {
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
    private mutating func wholeImage(into merger: inout Merger) {
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
                found = ZBarEngine.read(image, symbologies: symbologies, transform: t)
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
    private func isDecoded(_ code: Barcode) -> Bool {
        decoded.contains { Merger.sameSymbol($0, code) }
    }

    /// Whether most of `box` lies inside something already decoded or searched.
    private func isClaimed(_ box: PixelRect) -> Bool {
        let area = Double(max(1, box.width * box.height))
        return claimed.contains { Double(box.intersectionArea(with: $0)) / area >= 0.6 }
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

    // MARK: - Passes on a region

    /// The symbologies worth asking for on a region that looks like bars: 1D codes and
    /// PDF417 (whose rows look like bars).
    private var barSymbologies: Set<Symbology> {
        options.symbologies.filter {
            $0.isLinear
                || ($0 == .pdf417 && ProcessInfo.processInfo.environment["SCANNER_NOPDF"] == nil)
        }
    }

    private func zxingPass() -> ZXingEngine.Pass { ZXingEngine.Pass(searching: options) }

    /// Runs the region's variants in order until one decodes; returns the name of the last
    /// one run and what it found, in `grey`'s coordinates.
    private func cascade(_ candidate: Candidate, _ area: PixelRect) -> (String, [Barcode]) {
        guard area.width >= 8, area.height >= 8, let crop = grey.cropped(to: area) else {
            return ("none", [])
        }
        let thorough = options.effort == .thorough
        var toGrey = PointTransform.translation(Double(area.x), Double(area.y))
        // The working image: the region, with bars at an angle turned upright so that rows
        // cross them (rows also cross bars tilted up to about 20°: those stay as they are).
        var work = crop
        if candidate.isLinear, abs(candidate.angle) > 20 {
            let (rotated, back) = GreyOps.rotated(crop, degrees: -candidate.angle)
            work = rotated
            toGrey = toGrey.after(back)
        }
        // The texture's angle is a mean over the region: digits, a PDF417's data columns or
        // background drift it by 10-20°, and a long, short symbol tilted by 10° is crossed
        // whole by no row. The bars' own angle (``RegionFinder/barAngle(_:)``) gives a second
        // working image when it differs, for the stages reading `.upright`; measured when
        // the first such stage is reached.
        // Linear regions, located PDF417s, and 2D regions whose texture leans one way (a
        // PDF417 at an angle measures 0.2-0.3; QR codes and DataMatrix below 0.2).
        let measures =
            candidate.isLinear || candidate.symbology == .pdf417 || candidate.coherence >= 0.2
        var uprightMeasured = false
        var uprightImage: (ImageBuffer, PointTransform)?
        func upright() -> (ImageBuffer, PointTransform)? {
            if uprightMeasured { return uprightImage }
            uprightMeasured = true
            guard measures,
                let measured = RegionFinder.barAngle(
                    crop, near: candidate.isLinear ? candidate.angle : nil)
            else { return nil }
            let used = candidate.isLinear && abs(candidate.angle) > 20 ? candidate.angle : 0
            logger.debug(
                "scanner bar angle",
                metadata: ["texture": "\(Int(candidate.angle))", "bars": "\(measured)"]
            )
            guard abs(measured - used) > 4, abs(abs(measured - used) - 180) > 4 else { return nil }
            let (rotated, back) = GreyOps.rotated(crop, degrees: -measured)
            uprightImage = (
                rotated, PointTransform.translation(Double(area.x), Double(area.y)).after(back)
            )
            return uprightImage
        }
        // Scaling up helps modules under about 2.5 px. The region's extent bounds them: a
        // 1D symbol spans 60-200 modules across its bars, a 2D one 10-150; a large region
        // has large modules (or is texture), and four times its pixels would be wasted.
        let box = candidate.box
        let r = candidate.angle * .pi / 180
        let across =
            candidate.isLinear
            ? abs(cos(r)) * Double(box.width) + abs(sin(r)) * Double(box.height)
            : Double(max(box.width, box.height))
        let fine = across <= (candidate.isLinear ? 700 : 380)
        // Light bars on a dark ground: the region's border (its quiet zone) is darker than
        // its middle. ZXing's own inverted retry misses such 1D codes next to their digits.
        let inverted =
            candidate.isLinear && options.searchesInverted
            && GreyOps.borderIsDarker(work)
        var stages: [Stage] = []
        let keep: Derivation = { g in (g, .identity) }
        let upscale2: Derivation = { g in GreyOps.scaled(g, by: 2) }
        var first = zxingPass()
        first.tryDownscale = false
        // No inverted retries after the first pass (light-on-dark symbols are rare; thorough
        // adds a pass for them); 1D regions are upright, so no rotated retries for 1D codes
        // (PDF417 keeps them: its rows read upside down only with ZXing's rotation).
        var harder = first
        harder.tryInvert = false
        var quick = harder
        quick.tryHarder = false
        if candidate.isLinear {
            let symbologies = barSymbologies
            guard !symbologies.isEmpty else { return ("none", []) }
            var uprightFirst = first
            uprightFirst.tryInvert = false
            // In the order of what rescued most per cost on the degraded set: the harder
            // search, a fixed threshold (cheap), then scaling up; sharpening and the global
            // binarizer rescued none there and run only when thorough.
            // Weakly oriented texture may be a 2D symbol among text: the first pass asks for
            // every symbology.
            let firstSymbologies = candidate.coherence < 0.55 ? options.symbologies : symbologies
            stages.append(Stage("harder", firstSymbologies, uprightFirst, zbar: .rows, keep))
            var fixed = harder
            fixed.binarizer = .fixedThreshold
            stages.append(Stage("fixed threshold", symbologies, fixed, zbar: nil, keep))
            if fine || thorough {
                stages.append(Stage("upscale x2", symbologies, harder, zbar: .rows, upscale2))
            }
            // Out-of-focus bars and PDF417 rows: unsharp masking restores their edges.
            if thorough {
                stages.append(
                    Stage("sharpen", symbologies, harder, zbar: .rows) { g in
                        (GreyOps.sharpened(g, radius: 2, amount: 1.5), .identity)
                    }
                )
            }
            // The bars' measured angle, when the texture's was off: second after the first
            // pass, which reads most symbols whatever their tilt.
            var deskewed = Stage("upright harder", symbologies, harder, zbar: .rows, keep)
            deskewed.source = .upright
            // Bars up to a label's edge on a textured surface: quiet zones painted in.
            var zoned = Stage("quiet zones", symbologies, harder, zbar: .rows) { g in
                RegionFinder.withQuietZones(g).map { ($0, .identity) }
            }
            zoned.source = .uprightOrWork
            stages.insert(contentsOf: [deskewed, zoned], at: 1)
            if thorough {
                var global = quick
                global.binarizer = .globalHistogram
                stages.append(Stage("global histogram", symbologies, global, zbar: nil, keep))
            }
            if inverted || (thorough && options.searchesInverted) {
                stages.insert(
                    Stage("inverted", symbologies, harder, zbar: .rows) { g in
                        (GreyOps.inverted(g), .identity)
                    },
                    at: inverted ? 1 : stages.count
                )
            }
            if thorough, fine {
                stages.append(
                    Stage("upscale x3", symbologies, harder, zbar: .rows) { g in
                        GreyOps.scaled(g, by: 3)
                    }
                )
            }
        } else {
            // The harder search asks for everything (a 1D code at an angle next to its
            // digits can look isotropic); the variants after it for 2D symbols only, which
            // spares ZXing's row-by-row 1D readers.
            let all = options.symbologies
            let symbologies = all.filter { !$0.isLinear }
            stages.append(Stage("harder", all, first, zbar: nil, keep))
            if symbologies.contains(.pdf417), candidate.symbology == .pdf417 || measures {
                // A PDF417 at an angle: its rows turned along the image's rows.
                var deskewed = Stage("upright harder", [.pdf417], harder, zbar: nil, keep)
                deskewed.source = .upright
                stages.append(deskewed)
            }
            var fixed = harder
            fixed.binarizer = .fixedThreshold
            // (The fixed threshold is cheap, and low-contrast 1D codes, whose bars blur into
            // their digits, end up here: it asks for everything too.)
            stages.append(Stage("fixed threshold", all, fixed, zbar: nil, keep))
            if candidate.symbology == .pdf417 {
                // Out-of-focus PDF417 rows: unsharp masking restores their edges.
                stages.append(
                    Stage("sharpen", [.pdf417], harder, zbar: nil) { g in
                        (GreyOps.sharpened(g, radius: 2, amount: 1.5), .identity)
                    }
                )
            }
            if fine || thorough {
                stages.append(Stage("upscale x2", symbologies, harder, zbar: nil, upscale2))
            }
            // Noise, print dots and photo-textured modules: a light blur joins them (zbar's
            // QR reader, which binarizes its own way, reads some that ZXing does not; it
            // costs a scan of every line, so only on regions of symbol size).
            stages.append(
                Stage("blur", symbologies, harder, zbar: fine ? .all : nil) { g in
                    (GreyOps.blurred(g), .identity)
                }
            )
            if thorough {
                var global = quick
                global.binarizer = .globalHistogram
                stages.append(
                    Stage("contrast", symbologies, global, zbar: nil) { g in
                        (GreyOps.contrastStretched(g) ?? g, .identity)
                    }
                )
            }
            // Square, isotropic texture (a 2D symbol's, not text's or a 1D code's): worth
            // the strongest smoothing too.
            let square =
                candidate.coherence < 0.2
                && Double(max(area.width, area.height)) <= 1.5
                    * Double(min(area.width, area.height))
            if thorough || square {
                var global = harder
                global.binarizer = .globalHistogram
                stages.append(
                    Stage("upscale x3 blur", symbologies, global, zbar: nil) { g in
                        let (up, t) = GreyOps.scaled(g, by: 3)
                        return (GreyOps.blurred(up), t)
                    }
                )
            }
            if thorough {
                if options.searchesRotations {
                    for degrees in [45.0, -45.0] {
                        stages.append(
                            Stage("rotate \(Int(degrees))", symbologies, harder, zbar: nil) { g in
                                GreyOps.rotated(g, degrees: degrees)
                            }
                        )
                    }
                }
            }
        }
        // Variants with nothing left to ask for (2D variants when only 1D codes are wanted).
        stages.removeAll { $0.symbologies.isEmpty }
        var last = "none"
        for stage in stages {
            last = stage.name
            let stageStarted = ContinuousClock.now
            defer {
                logger.debug(
                    "scanner stage",
                    metadata: Self.metadata(
                        "stage-" + stage.name.replacingOccurrences(of: " ", with: "-")
                            + (candidate.isLinear ? "-1D" : "-2D"),
                        0,
                        stageStarted
                    )
                )
            }
            let source: (ImageBuffer, PointTransform)
            switch stage.source {
            case .work: source = (work, toGrey)
            case .upright:
                guard let turned = upright() else { continue }
                source = turned
            case .uprightOrWork: source = upright() ?? (work, toGrey)
            }
            guard let (image, t) = stage.derive(source.0) else { continue }
            let transform = source.1.after(t)
            var found =
                ZXingEngine.read(
                    image,
                    symbologies: stage.symbologies,
                    pass: stage.pass,
                    maximumSymbols: options.maximumSymbols,
                    transform: transform
                ) ?? []
            if found.isEmpty, ProcessInfo.processInfo.environment["SCANNER_NOZBAR"] == nil,
                let lines = stage.zbar, ZBarEngine.supports(any: stage.symbologies)
            {
                found = ZBarEngine.read(
                    image,
                    symbologies: stage.symbologies,
                    // 1D stages: lines across the bars are plenty; 2D: zbar's QR finder
                    // needs every line.
                    scanLines: candidate.isLinear
                        ? lines.capped(height: image.height, width: image.width) : lines,
                    transform: transform
                )
            }
            // Only what is new ends the region's search: a neighbour decoded before may
            // be read again from the same pixels.
            let fresh = found.filter { code in !isDecoded(code) && liesOnBars(code) }
            if !fresh.isEmpty { return (last, fresh) }
        }
        return (last, [])
    }

    /// A derived image and the way back to its source's coordinates; nil skips the stage.
    typealias Derivation = @Sendable (ImageBuffer) -> (ImageBuffer, PointTransform)?

    /// One variant: derive an image from the region, read it with ZXing, then with zbar
    /// when ZXing finds nothing (1D only: zbar's QR reader adds nothing ZXing misses).
    private struct Stage {
        var name: String
        var symbologies: Set<Symbology>
        var pass: ZXingEngine.Pass
        /// zbar's scan lines when zbar runs after ZXing; nil: ZXing only.
        var zbar: ZBarEngine.ScanLines?
        var derive: Derivation
        /// Which image the stage derives from.
        var source = Source.work

        enum Source {
            /// The working image (the region, turned upright by the texture's angle).
            case work
            /// The region turned by the bars' measured angle; skipped when that is no other.
            case upright
            /// That when there is one, else the working image.
            case uprightOrWork
        }

        init(
            _ name: String,
            _ symbologies: Set<Symbology>,
            _ pass: ZXingEngine.Pass,
            zbar: ZBarEngine.ScanLines?,
            _ derive: @escaping Derivation
        ) {
            self.name = name
            self.symbologies = symbologies
            self.pass = pass
            self.zbar = zbar
            self.derive = derive
        }
    }

    /// A 2D symbol's middle, searched for a symbol printed inside it.
    private func lookInside(_ box: PixelRect) -> [Barcode] {
        guard box.width >= 60, box.height >= 60 else { return [] }
        let inset = PixelRect(
            x: box.x + box.width / 5,
            y: box.y + box.height / 5,
            width: box.width * 3 / 5,
            height: box.height * 3 / 5
        )
        var quick = zxingPass()
        quick.tryHarder = false
        return ZXingEngine.readAll(
            grey,
            region: inset,
            symbologies: options.symbologies.filter { !$0.isLinear },
            pass: quick,
            maximumSymbols: options.maximumSymbols,
            transform: .identity
        )?.decoded ?? []
    }

    // MARK: - Results

    /// Whether a 1D reading from a fallback pass lies on bars: over its place the edges run
    /// one way. A decoder driven hard enough (scaled, sharpened, zbar on every line) can
    /// find a valid EAN, ITF or DataBar in wood grain or sensor noise; bars there are not.
    private func liesOnBars(_ code: Barcode) -> Bool {
        guard code.symbology.isLinear else { return true }
        var box = code.boundingBox
        // A scan line: give it the height of the bars around it.
        if box.height < box.width / 4 {
            box = PixelRect(
                x: box.x,
                y: box.y - box.width / 8,
                width: box.width,
                height: box.width / 4
            )
        } else if box.width < box.height / 4 {
            box = PixelRect(
                x: box.x - box.height / 8,
                y: box.y,
                width: box.height / 4,
                height: box.height
            )
        }
        guard let coherence = field.coherence(in: box) else { return true }
        return coherence >= 0.3
    }

    /// Claims the readings' places and adds them, mapped to the caller's coordinates;
    /// readings of fallback passes (`checked`) only where they lie on bars.
    private mutating func add(_ found: [Barcode], to merger: inout Merger, checked: Bool = true) {
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
