import Foundation
import Logging
import ScannerImages

/// The passes run on one region: the cascade of variants, stage by stage, and the search
/// inside a decoded 2D symbol (``RegionSearch``'s costly half).
extension RegionSearch {

    /// The symbologies worth asking for on a region that looks like bars: 1D codes and
    /// PDF417 (whose rows look like bars).
    var barSymbologies: Set<Symbology> {
        options.symbologies.filter { $0.isLinear || $0 == .pdf417 }
    }

    func zxingPass() -> ZXingEngine.Pass { ZXingEngine.Pass(searching: options) }

    /// Runs the region's variants in order until one decodes; returns the name of the last
    /// one run and what it found, in `grey`'s coordinates.
    func cascade(_ candidate: Candidate, _ area: PixelRect) -> (String, [Barcode]) {
        guard area.width >= 8, area.height >= 8, let crop = grey.cropped(to: area) else {
            return ("none", [])
        }
        let thorough = options.effort == .thorough
        var toGrey = PointTransform.translation(Double(area.x), Double(area.y))
        // The working image: the region, with bars at an angle turned upright so that rows
        // cross them (rows also cross bars tilted up to about 20°: those stay as they are).
        var work = crop
        if candidate.barsLieAlongRows {
            // A quarter turn, pixel for pixel, so that a symbol turned by a quarter reads as
            // it does upright.
            let (turned, back) = GreyOps.quarterTurned(crop)
            work = turned
            toGrey = toGrey.after(back)
        } else if candidate.isLinear, abs(candidate.angle) > 20 {
            let (rotated, back) = GreyOps.rotatedSharp(crop, degrees: -candidate.angle)
            work = rotated
            toGrey = toGrey.after(back)
        }
        // The texture's angle is a mean over the region: digits, a PDF417's data columns or
        // background drift it by 10-20°, and a long, short symbol tilted by 10° is crossed
        // whole by no row. The bars' own angle (``RegionFinder/barAngle(_:)``) gives a second
        // working image when it differs, for the stages reading `.upright`; measured when
        // the first such stage is reached.
        // Linear regions, located PDF417s, and 2D regions whose texture leans one way (a
        // PDF417 at an angle measures 0.2-0.3; QR codes and DataMatrix below 0.2) or that
        // are half as long again as they are wide (QR codes and DataMatrix are square, or
        // nearly, at any angle).
        let measures =
            candidate.isLinear || candidate.symbology == .pdf417 || candidate.coherence >= 0.2
            || max(area.width, area.height) * 2 >= 3 * min(area.width, area.height)
        var uprightMeasured = false
        var uprightAngle: Double?
        var uprightImage: (ImageBuffer, PointTransform)?
        func upright() -> (ImageBuffer, PointTransform)? {
            if uprightMeasured { return uprightImage }
            uprightMeasured = true
            guard measures,
                let measured = RegionFinder.barAngle(
                    crop,
                    near: candidate.isLinear ? candidate.angle : nil
                )
            else { return nil }
            let used = candidate.isLinear && abs(candidate.angle) > 20 ? candidate.angle : 0
            logger.debug(
                "scanner bar angle",
                metadata: ["texture": "\(Int(candidate.angle))", "bars": "\(measured)"]
            )
            guard abs(measured - used) > 4, abs(abs(measured - used) - 180) > 4 else { return nil }
            uprightAngle = measured
            let (rotated, back) = GreyOps.rotatedSharp(crop, degrees: -measured)
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
            // Small modules at an odd angle: turned and scaled up in one resampling (the
            // region's own: turning the turned image would blur it twice).
            if fine || thorough {
                var up = Stage("upright upscale", symbologies, harder, zbar: .rows, keep)
                up.source = .uprightUpscaled
                stages.append(up)
            }
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
            // Bars too blurred for edges: EAN and UPC modules fitted (``BlurredUPCEAN``).
            if !BlurredUPCEAN.Layout.asked(symbologies).isEmpty {
                var fitted = Stage("blurred EAN", symbologies, harder, zbar: nil, keep)
                fitted.source = .widened
                let asked = symbologies
                fitted.reader = { image, transform in
                    BlurredUPCEAN.read(image, asked: asked)
                        .flatMap { $0.barcode(asked: asked, transform) }.map { [$0] } ?? []
                }
                stages.append(fitted)
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
                if fine || thorough {
                    var up = Stage("upright upscale", [.pdf417], harder, zbar: nil, keep)
                    up.source = .uprightUpscaled
                    stages.append(up)
                }
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
                // Scaled up, then a strong unsharp mask over about three of the scaled pixels:
                // small modules get their pixels, and modules out of focus (a blur of about a
                // module) their edges back. Measured on issue 29's sets against scaling alone:
                // degraded 479 -> 502 of 610 (QR and DataMatrix under blur, perspective, small
                // modules), families 593 -> 605 of 640, rotated 526 -> 528 of 552, no misread;
                // scaling alone after it read nothing more on any set, so it is gone. CPU
                // +3.7 % on the degraded set (six alternating runs). For 1D regions the same
                // stage added 5 symbols for 25-35 % more time (texture regions fail more).
                stages.append(
                    Stage("upscale x2 sharpen", symbologies, harder, zbar: nil) { g in
                        let (up, t) = GreyOps.scaled(g, by: 2)
                        return (GreyOps.sharpened(up, radius: 3, amount: 2.5), t)
                    }
                )
            }
            // Square, isotropic texture (a 2D symbol's, not text's or a 1D code's).
            let square =
                candidate.coherence < 0.2
                && Double(max(area.width, area.height)) <= 1.5
                    * Double(min(area.width, area.height))
            if square, fine, max(area.width, area.height) <= 200 {
                // Modules of about 1.5 px under JPEG blocks, where scaling by 2 leaves too few
                // pixels a module: scaled by 4 with Catmull-Rom (the sharp rotation by 0°),
                // whose smooth edges give the binarizer the modules' centres, then the same
                // unsharp mask over about five scaled pixels. Measured on issue 29's sets:
                // families hard 290 -> 300 of 320 (Aztec, DataMatrix, QR and Micro QR at
                // 1.6 px modules, JPEG quality 50), degraded 502 -> 508 of 610, no misread,
                // the other sets unchanged; half-widths 4-6 and amounts 2-3 read 296-300 and
                // 506-509. Regions up to 200 px (sixteen times their pixels): every rescue
                // but one on those sets, for 0.2 s of stage time a set, where unbounded
                // regions cost 0.9-1.3 s on the degraded and rotated sets.
                stages.append(
                    Stage("upscale x4 sharpen", symbologies, harder, zbar: nil) { g in
                        let (up, t) = GreyOps.rotatedSharp(g, degrees: 0, scale: 4)
                        return (GreyOps.sharpened(up, radius: 5, amount: 2.5), t)
                    }
                )
            }
            // Noise, print dots and photo-textured modules: a light blur joins them (zbar's
            // QR reader, which binarizes its own way, reads some that ZXing does not; it
            // costs a scan of every line, so only on regions of symbol size).
            stages.append(
                Stage("blur", symbologies, harder, zbar: fine ? .all : nil) { g in
                    (GreyOps.blurred(g), .identity)
                }
            )
            // A label on a bottle or a can: only where ZXing located a 2D symbol (run on
            // every square region, it cost 40 % more CPU on the degraded set for one symbol).
            if fine, let located = candidate.locatedBox {
                stages.append(cylinderStage(located, symbologies, harder))
            }
            if thorough {
                var global = quick
                global.binarizer = .globalHistogram
                stages.append(
                    Stage("contrast", symbologies, global, zbar: nil) { g in
                        (GreyOps.contrastStretched(g) ?? g, .identity)
                    }
                )
            }
            // Square texture is worth the strongest smoothing too, when small enough for its
            // modules to be small (as for scaling by 2: nine times a large region's pixels
            // were 90 ms a region on the MaxiCode photos and rescued nothing on any of our
            // five sets).
            if thorough || (square && fine) {
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
            case .widened:
                // The image's whole width along the region's rows: blurred fine modules make
                // flat grey that splits one symbol's texture into regions, each holding part.
                // Only for bars that need no turn (a turned crop's filled corners make edges
                // of their own) or a quarter turn, as `work` has it: then the image's whole
                // height along the region's columns, turned pixel for pixel. (Bars 10° off
                // the rows, turned a quarter, read in the crop turned by their angle but not
                // along the band.)
                guard candidate.isLinear, upright() == nil,
                    let wide = abs(candidate.angle) <= 20
                        ? Self.rowBand(grey, y: area.y, height: area.height)
                        : candidate.barsLieAlongRows
                            ? Self.columnBand(grey, x: area.x, width: area.width) : nil
                else {
                    source = upright() ?? (work, toGrey)
                    break
                }
                source = wide
            case .uprightUpscaled:
                // Modules of one or two pixels, which a symbol in a region of more than
                // 100,000 pixels seldom has; scaling by 1.5 read as many as by 2 (the rotated
                // set) for half the pixels.
                guard area.width * area.height <= 100_000, upright() != nil,
                    let angle = uprightAngle
                else { continue }
                let (rotated, back) = GreyOps.rotatedSharp(crop, degrees: -angle, scale: 1.5)
                source = (
                    rotated, PointTransform.translation(Double(area.x), Double(area.y)).after(back)
                )
            }
            guard let (image, t) = stage.derive(source.0) else { continue }
            let transform = source.1.after(t)
            var found =
                stage.reader?(image, transform) ?? ZXingEngine.read(
                    image,
                    symbologies: stage.symbologies,
                    pass: stage.pass,
                    maximumSymbols: options.maximumSymbols,
                    transform: transform
                ) ?? []
            if found.isEmpty, let lines = stage.zbar, ZBarEngine.supports(any: stage.symbologies) {
                found = ZBarEngine.read(
                    image,
                    symbologies: stage.symbologies,
                    // 1D stages: lines across the bars are plenty; 2D: zbar's QR finder
                    // needs every line.
                    scanLines: candidate.isLinear
                        ? lines.capped(height: image.height, width: image.width) : lines,
                    transform: transform,
                    surroundings: ZBarEngine.Surroundings(grey: grey)
                )
            }
            // Only what is new ends the region's search: a neighbour decoded before may
            // be read again from the same pixels.
            let fresh = found.filter { code in
                !isDecoded(code) && liesOnBars(code) && !contradictsDecoded(code)
                    && Self.hasPlausibleShape(code)
            }
            if !fresh.isEmpty { return (last, fresh) }
            // Only symbols decoded before: the region may be nothing but them, and every
            // later stage would read them again. It is when their boxes, widened over quiet
            // zones and digits, take in most of it (as ``isClaimed(_:)`` judges: zbar's box of
            // a tilted symbol is a few scan lines', which claimed too little of it), or when
            // its texture is far fainter than theirs, the ground around them (a label's edge,
            // paper grain, a photo's background) whose box takes them in. On the families set
            // (one symbol an image) such regions ran every stage and read nothing: 6.2 of
            // 11.6 s of logged work. A second symbol beside a decoded one lies outside its
            // box, in texture as strong (0.55 and 0.64 of its neighbour's on the degraded
            // set, both read a few stages later); the ground measures below 0.2 mostly.
            if !found.isEmpty, found.allSatisfy(isDecoded) {
                let area = Double(max(1, candidate.box.width * candidate.box.height))
                let covered = found.contains {
                    Double(candidate.box.intersectionArea(with: Self.widened($0))) / area >= 0.6
                }
                // (A located candidate has no texture measure of its own.)
                let ground =
                    candidate.tiles > 0
                    && found.contains {
                        candidate.energy < 0.3 * (field.energy(in: $0.boundingBox) ?? 0)
                    }
                if covered || ground {
                    return (last + (covered ? " (decoded before)" : " (ground)"), [])
                }
            }
        }
        return (last, [])
    }

    /// A derived image and the way back to its source's coordinates; nil skips the stage.
    typealias Derivation = @Sendable (ImageBuffer) -> (ImageBuffer, PointTransform)?

    /// One variant: derive an image from the region, read it with ZXing, then with zbar
    /// when ZXing finds nothing (1D only: zbar's QR reader adds nothing ZXing misses).
    struct Stage {
        var name: String
        var symbologies: Set<Symbology>
        var pass: ZXingEngine.Pass
        /// zbar's scan lines when zbar runs after ZXing; nil: ZXing only.
        var zbar: ZBarEngine.ScanLines?
        var derive: Derivation
        /// Which image the stage derives from.
        var source = Source.work
        /// A reader of its own in place of ZXing and zbar.
        var reader: (@Sendable (ImageBuffer, PointTransform) -> [Barcode])?

        enum Source {
            /// The working image (the region, turned upright by the texture's angle).
            case work
            /// The region turned by the bars' measured angle; skipped when that is no other.
            case upright
            /// That when there is one, else the working image.
            case uprightOrWork
            /// The region turned by the bars' measured angle and scaled by 1.5 in one go.
            case uprightUpscaled
            /// The region's rows across the whole image when its bars need no turn; else as
            /// ``uprightOrWork``.
            case widened
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

    /// A 2D symbol on a curved label (a bottle, a can), located by ZXing at `symbol` (the
    /// box of every 2D symbol it located there, ``Candidate/locatedBox``): unrolled from a
    /// few cylinders (``cylinders``), axis along the columns and then along the rows through
    /// the box's middle, each read by ZXing
    /// (``GreyOps/cylinderFlattened(_:axis:centre:middle:radius:distance:scale:)``); a
    /// reading's corners are mapped back through the cylinder into `grey`.
    func cylinderStage(
        _ symbol: PixelRect,
        _ symbologies: Set<Symbology>,
        _ pass: ZXingEngine.Pass
    ) -> Stage {
        var stage = Stage("cylinder", symbologies, pass, zbar: nil) { g in (g, .identity) }
        let maximumSymbols = options.maximumSymbols
        let grey = grey
        // The crop takes in a margin for the squeezed sides and the quiet zone (the located
        // box is the finder patterns').
        let margin = max(symbol.width, symbol.height) / 4
        let crop = PixelRect(
            x: symbol.x - margin,
            y: symbol.y - margin,
            width: symbol.width + 2 * margin,
            height: symbol.height + 2 * margin
        ).clipped(toWidth: grey.width, height: grey.height)
        stage.reader = { _, _ in
            guard let crop, let image = grey.cropped(to: crop) else { return [] }
            let toGrey = PointTransform.translation(Double(crop.x), Double(crop.y))
            for axis in GreyOps.CylinderAxis.allCases {
                let vertical = axis == .vertical
                let half = Double(vertical ? symbol.width : symbol.height) / 2
                let centre = Double(vertical ? symbol.x - crop.x : symbol.y - crop.y) + half
                let middle =
                    Double(vertical ? symbol.y - crop.y : symbol.x - crop.x)
                    + Double(vertical ? symbol.height : symbol.width) / 2
                for (halfAngle, distance) in RegionSearch.cylinders {
                    let flat = GreyOps.cylinderFlattened(
                        image,
                        axis: axis,
                        centre: centre,
                        middle: middle,
                        radius: half / sin(halfAngle),
                        distance: distance,
                        scale: 2
                    )
                    let found =
                        ZXingEngine.read(
                            flat.image,
                            symbologies: symbologies,
                            pass: pass,
                            maximumSymbols: maximumSymbols,
                            transform: .identity
                        ) ?? []
                    guard !found.isEmpty else { continue }
                    return found.map { code in
                        var mapped = code
                        mapped.points = code.points.map { p in
                            let (x, y) = flat.back(Double(p.x), Double(p.y))
                            let q = toGrey.apply(x: x, y: y)
                            return ImagePoint(x: Int(q.x.rounded()), y: Int(q.y.rounded()))
                        }
                        return mapped
                    }
                }
            }
            return []
        }
        return stage
    }

    /// The cylinders a curved symbol is unrolled from: the half angle (radians) its located
    /// extent takes in either side of the line facing the camera, and the camera's distance
    /// from the axis in radii (`.infinity`: from afar). Seen from afar, a symbol a quarter
    /// of the way round (0.6) has its outer modules squeezed to 0.8 of their width, at 0.9
    /// to 0.6; from 3 radii (a phone held close to a can) its rows also bow towards the
    /// middle. On two sets of 80 QR codes and DataMatrix symbols wrapped round cylinders
    /// (`scripts/fixtures/curved-labels.py`, seeds 1 and 2: half angles 0.35-1.0, cameras
    /// at 2.2-30 radii, 2.2-3.5 px modules, turned up to 8°, blurred, JPEG), the default
    /// effort read 35 and 38 without this stage and 46 and 41 with these four cylinders;
    /// three from afar read 39 and 41, eight (four angles, two distances) 48 and 42. Only
    /// located symbols get it: on the degraded set's 610 symbols and 200 barcode-free images
    /// it read nothing more, for 3 % more CPU (40 % when every square region got it).
    static let cylinders: [(halfAngle: Double, distance: Double)] = [
        (0.6, .infinity), (0.9, .infinity), (0.6, 3), (0.9, 3),
    ]

    /// A 2D symbol's middle, searched for a symbol printed inside it.
    func lookInside(_ box: PixelRect) -> [Barcode] {
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
}
