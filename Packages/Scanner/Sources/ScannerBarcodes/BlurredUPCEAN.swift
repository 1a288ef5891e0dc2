import Foundation
import ScannerImages

/// EAN-13, UPC-A, EAN-8 and UPC-E read from bars too blurred for an edge-based reader, by
/// fitting the symbol's modules, blurred, to the light across them: deformable templates,
/// after Gallo and Manduchi, "Reading 1D barcodes with mobile phones using deformable
/// templates" (IEEE PAMI 33(9), 2011).
///
/// zbar and ZXing find bar edges and measure the widths between them. Out of focus (a
/// Gaussian blur of more than about 0.6 of a module), a one-module bar beside a one-module
/// space no longer makes two edges and those readers read nothing. The profile still holds
/// the symbol: each digit's seven modules, blurred, make a curve that differs from the other
/// digits' curves. Given where the symbol starts and ends and how wide the blur is, every digit
/// position scores every pattern by least squares (the light's level and contrast fitted per
/// digit, so uneven light does not matter), and the best digits that pass the check digit are
/// found exactly by dynamic programming over the checksum (``Layout`` has each symbology's
/// modules and check). The ends and the blur are searched on a grid, then refined.
///
/// The guards are fitted too, with the modules beside them that every symbol shares. A
/// reading is kept only when the fit explains the profile (``minimumFit``) and the best
/// code's residual is well below the best other valid code's (``Layout/minimumMargin``).
/// Measured while this was written, EAN-13's margin: on Code 128, Code 39, Codabar, Code 93,
/// ITF, DataBar and printed text, blurred or not, at most 1.04; on 300 random runs of bars,
/// blurred, at most 1.21, and at most 1.12 where the fit passed; on EAN-13s blurred by up to
/// 1.2 modules and read right, 1.45 and more, and 2.9-21 on the degraded set's readings.
enum BlurredUPCEAN {
    /// The fitted code's share of the profile's variance (1 − residual / variance).
    static let minimumFit: Float = 0.9

    /// A reading in the image's coordinates: the symbology (EAN-13 for UPC-A too) and its
    /// digits as the symbol holds them, the symbol's ends along the rows and the band of rows
    /// it was read on.
    struct Reading: Equatable {
        var symbology: Symbology
        var digits: [Int]
        var left: Double
        var right: Double
        var rows: ClosedRange<Int>

        /// The digits as text.
        var text: String { String(digits.map { Character(String($0)) }) }

        /// The reading as a barcode of a symbology in `asked` (UPC-A when an EAN-13's first
        /// digit is 0 and UPC-A is asked for; UPC-E as its UPC-A form), its corners mapped
        /// through `transform`; nil when it is not asked for.
        func barcode(asked: Set<Symbology>, _ transform: PointTransform) -> Barcode? {
            let (symbology, text) = RetailNormalization.normalize(
                self.symbology,
                text,
                asked: asked
            )
            guard asked.contains(symbology) else { return nil }
            let x0 = Int(left.rounded())
            let x1 = Int(right.rounded())
            let corners = [
                ImagePoint(x: x0, y: rows.lowerBound), ImagePoint(x: x1, y: rows.lowerBound),
                ImagePoint(x: x1, y: rows.upperBound), ImagePoint(x: x0, y: rows.upperBound),
            ]
            return Barcode(
                symbology: symbology,
                text: text,
                bytes: Data(text.utf8),
                points: corners.map(transform.apply),
                engine: .templates,
                isGS1: false,
                symbologyIdentifier: SymbologyIdentifier.make(for: symbology, isGS1: false)
            )
        }
    }

    /// The symbol read across `g`'s rows (bars upright, dark on light), either way round, on
    /// a band of rows through the middle, then at 30% and 70% of the height; nil unless a
    /// band's reading passes ``minimumFit`` and ``Layout/minimumMargin`` and no other band reads
    /// another code.
    static func read(_ g: ImageBuffer, asked: Set<Symbology>) -> Reading? {
        let w = g.width
        let h = g.height
        let layouts = Layout.asked(asked)
        guard w >= 100, h >= 4, !layouts.isEmpty, let bars = RegionFinder.barsExtent(g)
        else { return nil }
        var found: Reading?
        let half = max(1, h / 30)
        for (band, fraction) in [0.5, 0.3, 0.7].enumerated() {
            let y = min(h - 1 - half, max(half, Int(Double(h) * fraction)))
            let rows = (y - half)...(y + half)
            let profile = bandProfile(g, rows: rows)
            let (lefts, rights) = ends(profile, near: bars)
            guard !lefts.isEmpty, !rights.isEmpty else { continue }
            // Each layout either way round on the grid; the best place of each goes on
            // when it fits within half as much again as the best of all (a symbol upside
            // down fits the wrong way round no better than text does, nor one symbology's
            // bars another's modules, but a short layout can fit as well as the right one
            // before the check digit is asked).
            // A position P (between columns) is w - 1 - P the other way round.
            let width = Float(w - 1)
            let reversed = Array(profile.reversed())
            let flipped = (rights.map { width - $0 }, lefts.map { width - $0 })
            func grid(_ layout: Layout, _ isForward: Bool, tilts: [Float] = [0]) -> Start? {
                isForward
                    ? coarse(profile, layout, lefts: lefts, rights: rights, tilts: tilts)
                    : coarse(reversed, layout, lefts: flipped.0, rights: flipped.1, tilts: tilts)
            }
            var candidates: [(start: Start, layout: Layout, isForward: Bool)] = []
            for layout in layouts {
                for isForward in [true, false] {
                    if let start = grid(layout, isForward) {
                        candidates.append((start, layout, isForward))
                    }
                }
            }
            candidates.sort { $0.start.score < $1.start.score }
            // Far from any symbol seen square on: a tilt would not bring it within reach
            // (EAN-13s tilted by 0.12 fitted square on at 0.38-0.39).
            if band == 0, (candidates.first?.start.score ?? .infinity) > 0.45 { return nil }
            // The two best also at tilts either way (modules 8% and 16% wider at one end
            // than uniform, about as much narrower at the other): a photo taken at an angle.
            for c in candidates.indices.prefix(2) where candidates[c].start.score <= 0.45 {
                let candidate = candidates[c]
                if let tilted = grid(
                    candidate.layout,
                    candidate.isForward,
                    tilts: [-0.16, -0.08, 0.08, 0.16]
                ),
                    tilted.score < candidate.start.score
                {
                    candidates[c].start = tilted
                }
            }
            candidates.sort { $0.start.score < $1.start.score }
            guard let bestStart = candidates.first?.start.score else { continue }
            // Nothing like the symbol on the middle band: no other band is worth the work.
            // (EAN-13s blurred by up to 1.2 modules fitted at 0.12 and better; half the
            // unread bars of the degraded set's other symbologies, text and texture at 0.45
            // and worse.)
            if bestStart > 0.3, band == 0 { return nil }
            var nearMiss = false
            var reading: (Reading, margin: Float, layout: Layout)?
            for candidate in candidates.prefix(2)
            where candidate.start.score <= min(coarseLimit, 1.5 * bestStart) {
                guard
                    let fit = refine(
                        candidate.isForward ? profile : reversed,
                        candidate.layout,
                        from: candidate.start
                    )
                else { continue }
                nearMiss = nearMiss || (fit.fit >= 0.85 && fit.margin >= 1.1)
                guard fit.passes, fit.margin > (reading?.margin ?? 0) else { continue }
                reading = (
                    Reading(
                        symbology: candidate.layout.symbology,
                        digits: fit.digits,
                        left: Double(candidate.isForward ? fit.left : width - fit.right),
                        right: Double(candidate.isForward ? fit.right : width - fit.left),
                        rows: rows
                    ), fit.margin, candidate.layout
                )
            }
            guard let reading else {
                // The middle band fitted but told no code apart: the others only when it
                // came close (bars of other symbologies and texture end here).
                if band == 0, !nearMiss { return nil }
                continue
            }
            if let found, found.symbology != reading.0.symbology || found.digits != reading.0.digits
            {
                return nil
            }
            if found == nil {
                found = reading.0
                // Clear-cut: no other band is asked. Otherwise one may contradict it.
                if reading.margin >= 2 * reading.layout.minimumMargin { return found }
            }
        }
        return found
    }

    /// The coarse fit (residual over variance, with no check digit) above which a band is
    /// not refined.
    static let coarseLimit: Float = 0.25

    /// Where the symbol's first bar may start and its last end in `profile`: the outermost
    /// steps down and up of at least 0.3 of the strongest step, near the bars' run (within a
    /// third of its length: blurred thin bars make flat grey that splits the run, and their
    /// outer bars may be too faint to count for it) and in the whole profile. Positions are
    /// between columns (a step from x to x + 1 at x + 0.5).
    static func ends(_ profile: [Float], near bars: ClosedRange<Int>) -> ([Float], [Float]) {
        var lefts: [Float] = []
        var rights: [Float] = []
        let margin = bars.count / 3 + 8
        let windows = [
            max(0, bars.lowerBound - margin)...min(profile.count - 2, bars.upperBound + margin),
            0...(profile.count - 2),
        ]
        for window in windows {
            var strongest: Float = 0
            for x in window { strongest = max(strongest, abs(profile[x + 1] - profile[x])) }
            let threshold = 0.3 * strongest
            guard strongest > 0,
                let left = window.first(where: { profile[$0 + 1] - profile[$0] < -threshold }),
                let right = window.last(where: { profile[$0 + 1] - profile[$0] > threshold })
            else { continue }
            let l = Float(left) + 0.5
            let r = Float(right) + 0.5
            if !lefts.contains(where: { abs($0 - l) < 2 }) { lefts.append(l) }
            if !rights.contains(where: { abs($0 - r) < 2 }) { rights.append(r) }
        }
        return (lefts, rights)
    }

    /// The mean of `rows` in each column.
    static func bandProfile(_ g: ImageBuffer, rows: ClosedRange<Int>) -> [Float] {
        var sum = [Float](repeating: 0, count: g.width)
        g.pixels.withUnsafeBufferPointer { p in
            for y in rows {
                let row = y * g.stride
                for x in 0..<g.width { sum[x] += Float(p[row + x]) }
            }
        }
        let n = Float(rows.count)
        return sum.map { $0 / n }
    }

    // MARK: - The fit

    /// The residual of samples with centred square sum `variance` after the best fit of a
    /// pattern with centred square sum `spread` (a level and a contrast), `covariance` being
    /// their centred cross sum. Bars are dark: a fit with the pattern's contrast the wrong way
    /// round explains nothing.
    @inline(__always)
    static func residual(variance: Float, covariance: Float, spread: Float) -> Float {
        covariance < 0 ? variance - covariance * covariance / spread : variance
    }

    /// Each digit position's residual for each pattern it may hold (rows of 20: L then G, or
    /// R in the first 10) with the symbol at `place`, the best over the shifts (or none);
    /// the profile's variance about each digit's and guard window's mean, and the guards'
    /// residual.
    static func scores(
        _ p: [Float],
        _ layout: Layout,
        _ place: Place,
        shifting: Bool,
        into out: inout [Float]
    ) -> (variance: Float, guards: Float) {
        let modules = layout.modules
        let n = samplesPerDigit
        let positions = layout.digitStarts.count
        let shiftRange = shifting ? 0..<shifts.count : 2..<3
        var total: Float = 0
        for i in 0..<(positions * 20) { out[i] = .infinity }
        let templates = Self.templates
        var samples = [Float](repeating: 0, count: 24)
        templates.values.withUnsafeBufferPointer { t in
            templates.sums.withUnsafeBufferPointer { sums in
                templates.spreads.withUnsafeBufferPointer { spreads in
                    p.withUnsafeBufferPointer { p in
                        out.withUnsafeMutableBufferPointer { out in
                            samples.withUnsafeMutableBufferPointer { o in
                                for i in 0..<positions {
                                    let blur = place.blur(
                                        at: layout.digitStarts[i] + 3.5,
                                        modules: modules
                                    )
                                    for s in shiftRange {
                                        // The digit's samples (lanes 21-23 stay 0).
                                        let base = layout.digitStarts[i] + shifts[s]
                                        var so: Float = 0
                                        var soo: Float = 0
                                        for k in 0..<n {
                                            let u = base + (Float(k) + 0.5) / 3
                                            let v = place.sample(p, at: u, modules: modules)
                                            o[k] = v
                                            so += v
                                            soo += v * v
                                        }
                                        let raw = UnsafeRawPointer(o.baseAddress!)
                                        let o0 = raw.loadUnaligned(as: SIMD8<Float>.self)
                                        let o1 = raw.loadUnaligned(
                                            fromByteOffset: 32,
                                            as: SIMD8<Float>.self
                                        )
                                        let o2 = raw.loadUnaligned(
                                            fromByteOffset: 64,
                                            as: SIMD8<Float>.self
                                        )
                                        let vo = soo - so * so / Float(n)
                                        if s == 2 { total += vo }
                                        for j in 0..<layout.patternCount(i) {
                                            let ti = Templates.index(
                                                blur: blur,
                                                shift: s,
                                                pattern: layout.pattern(i, j)
                                            )
                                            let sot =
                                                (o0 * t[3 * ti] + o1 * t[3 * ti + 1] + o2
                                                * t[3 * ti + 2]).sum()
                                            let r = residual(
                                                variance: vo,
                                                covariance: sot - so * sums[ti] / Float(n),
                                                spread: spreads[ti]
                                            )
                                            if r < out[i * 20 + j] { out[i * 20 + j] = r }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // The guards: fixed patterns, no shift.
        var guards: Float = 0
        p.withUnsafeBufferPointer { p in
            for w in layout.guards {
                let window = guardWindows[w]
                let blur = place.blur(
                    at: Float(window.start) + Float(window.modules.count) / 2,
                    modules: modules
                )
                let template = guardTemplates[blur * guardWindows.count + w]
                let n = template.values.count
                let base = Float(window.start)
                var so: Float = 0
                var soo: Float = 0
                var sot: Float = 0
                for k in 0..<n {
                    let v = place.sample(p, at: base + (Float(k) + 0.5) / 3, modules: modules)
                    so += v
                    soo += v * v
                    sot += v * template.values[k]
                }
                let vo = soo - so * so / Float(n)
                total += vo
                guards += residual(
                    variance: vo,
                    covariance: sot - so * template.sum / Float(n),
                    spread: template.spread
                )
            }
        }
        return (total, guards)
    }

    /// The fit's digits, where it put the ends, and the second-best valid code's residual
    /// over the best one's.
    struct Fit {
        var digits: [Int]
        var left: Float
        var right: Float
        /// The fitted code's share of the profile's variance.
        var fit: Float
        var margin: Float
        /// Whether it passes ``minimumFit`` and the layout's ``Layout/minimumMargin``.
        var passes: Bool
    }

    /// Where a symbol lies in a profile and how it looks: the first bar's start and the last
    /// bar's end (pixels), the tilt of its plane and the blur (an index of ``blurs``).
    struct Place {
        var left: Float
        var right: Float
        /// A symbol photographed at an angle to its plane has modules wider at the near end:
        /// module u of n lies at left + (right − left) · f(u / n), f(t) = t (1 + k) / (1 + k t),
        /// the one-dimensional projection that keeps both ends. Its modules are 1 + k times
        /// wider at the start than uniform ones, 1 / (1 + k) at the end.
        var tilt: Float = 0
        var blur: Int

        /// The blur index at module position `u`: the blur is the camera's, the same in
        /// pixels along the symbol, so where a tilted symbol's modules are narrower it is
        /// wider in modules. ``blur`` is the blur at the mean module width.
        @inline(__always)
        func blur(at u: Float, modules: Int) -> Int {
            guard tilt != 0 else { return blur }
            // The mean module width over the local one: 1 / f'(t).
            let t = u / Float(modules)
            let ratio = (1 + tilt * t) * (1 + tilt * t) / (1 + tilt)
            let index = Int((BlurredUPCEAN.blurs[blur] * ratio - 0.3) / 0.1 + 0.5)
            return min(BlurredUPCEAN.blurs.count - 1, max(0, index))
        }

        /// The profile at module position `u`, linearly interpolated, clamped to its ends.
        @inline(__always)
        func sample(_ p: UnsafeBufferPointer<Float>, at u: Float, modules: Int) -> Float {
            let x = min(Float(p.count - 1), max(0, pixel(u, modules: modules)))
            let x0 = Int(x)
            let x1 = min(x0 + 1, p.count - 1)
            return p[x0] + (p[x1] - p[x0]) * (x - Float(x0))
        }

        /// Module position `u` (of `modules`) to pixel.
        @inline(__always)
        func pixel(_ u: Float, modules: Int) -> Float {
            let t = u / Float(modules)
            return left + (right - left) * t * (1 + tilt) / (1 + tilt * t)
        }
    }

    /// A place on the grid, with its fit (residual over variance).
    typealias Start = (score: Float, place: Place)

    /// The grid: ends within 1.2 modules of each pair of candidates, 0.8 apart (a pixel a
    /// module at least; with tilts, within 0.8), blurs of 0.5, 0.9 and 1.3 modules, the
    /// given tilts: the best place.
    /// The refinement reaches 0.675 of a module, 0.3 of blur and 0.07 of tilt further.
    static func coarse(
        _ p: [Float],
        _ layout: Layout,
        lefts: [Float],
        rights: [Float],
        tilts: [Float] = [0]
    ) -> Start? {
        var out = [Float](repeating: 0, count: layout.digitStarts.count * 20)
        var best: Start?
        let modules = Float(layout.modules)
        let offsets: [Float] = tilts == [0] ? [-1.2, -0.4, 0.4, 1.2] : [-0.8, 0, 0.8]
        for l0 in lefts {
            for r0 in rights where r0 - l0 >= modules {
                let m0 = (r0 - l0) / modules
                for dl in offsets {
                    for dr in offsets {
                        for blur in [2, 6, 10] {
                            for tilt in tilts {
                                let place = Place(
                                    left: l0 + dl * m0,
                                    right: r0 + dr * m0,
                                    tilt: tilt,
                                    blur: blur
                                )
                                let fit = scores(p, layout, place, shifting: false, into: &out)
                                guard fit.variance > 0 else { continue }
                                let score = (bestSum(out, layout) + fit.guards) / fit.variance
                                if score < (best?.score ?? .infinity) { best = (score, place) }
                            }
                        }
                    }
                }
            }
        }
        return best
    }

    /// A place of the grid refined in three rounds (ends by 0.375, 0.2 and 0.1 of a module
    /// together with the tilt by 0.04, 0.02 and 0.01, then the blur by 0.1; digits shifted in
    /// the last round), then the code and how well it fits.
    static func refine(_ p: [Float], _ layout: Layout, from start: Start) -> Fit? {
        var out = [Float](repeating: 0, count: layout.digitStarts.count * 20)
        let m0 = (start.place.right - start.place.left) / Float(layout.modules)
        var best = start
        best.score = .infinity
        func consider(_ place: Place, shifting: Bool, into next: inout Start) {
            guard blurs.indices.contains(place.blur) else { return }
            let fit = scores(p, layout, place, shifting: shifting, into: &out)
            let score = bestSum(out, layout) + fit.guards
            if score < next.score { next = (score, place) }
        }
        // Ends and tilt together (a tilt moves the middle of the symbol as the ends move its
        // sides), then the blur; digits shifted in the last round.
        let rounds: [(Float, Float)] = [(0.375, 0.04), (0.2, 0.02), (0.1, 0.01)]
        for (round, (step, tiltStep)) in rounds.enumerated() {
            let shifting = round == rounds.count - 1
            var next = best
            next.score = .infinity
            for dl in [-step, 0, step] {
                for dr in [-step, 0, step] {
                    for dt in [-tiltStep, 0, tiltStep] {
                        var place = best.place
                        place.left += dl * m0
                        place.right += dr * m0
                        place.tilt += dt
                        consider(place, shifting: shifting, into: &next)
                    }
                }
            }
            best = next
            let centre = best.place
            for db in [-1, 1] {
                var place = centre
                place.blur += db
                consider(place, shifting: shifting, into: &best)
            }
        }
        let final = scores(p, layout, best.place, shifting: true, into: &out)
        let codes = twoBest(out, layout)
        guard codes.count == 2, final.variance > 0 else { return nil }
        let fit = 1 - (codes[0].score + final.guards) / final.variance
        let margin = codes[1].score / max(codes[0].score, 1e-6)
        return Fit(
            digits: codes[0].digits,
            left: best.place.left,
            right: best.place.right,
            fit: fit,
            margin: margin,
            passes: fit >= minimumFit
                && margin >= layout.minimumMargin * (1 + 2 * abs(best.place.tilt))
        )
    }

    /// The sum of each position's best pattern: the fit with no check digit.
    static func bestSum(_ out: [Float], _ layout: Layout) -> Float {
        var sum: Float = 0
        for i in 0..<layout.digitStarts.count {
            var best = Float.infinity
            for j in 0..<layout.patternCount(i) where out[i * 20 + j] < best {
                best = out[i * 20 + j]
            }
            sum += best
        }
        return sum
    }
}
