import Foundation
import ScannerImages

/// EAN-13 and UPC-A read from bars too blurred for an edge-based reader, by fitting the
/// symbol's modules, blurred, to the light across them: deformable templates, after Gallo
/// and Manduchi, "Reading 1D barcodes with mobile phones using deformable templates" (IEEE
/// PAMI 33(9), 2011).
///
/// zbar and ZXing find bar edges and measure the widths between them. Out of focus (a
/// Gaussian blur of more than about 0.6 of a module), a one-module bar beside a one-module
/// space no longer makes two edges and those readers read nothing. The profile still holds
/// the symbol: each digit's seven modules, blurred, make a curve that differs from the other
/// digits' curves. Given where the symbol starts and ends and how wide the blur is, every digit
/// position scores every pattern by least squares (the light's level and contrast fitted per
/// digit, so uneven light does not matter), and the best digits that pass the check digit are
/// found exactly by dynamic programming over the checksum. The ends and the blur are searched
/// on a grid, then refined.
///
/// The guards (`101`, `01010`, `101`) are fitted too, with the modules beside them that
/// every symbol shares. A reading is kept only when the fit explains the profile
/// (``minimumFit``) and the best code's residual is well below the best other valid code's
/// (``minimumMargin``). Measured while this was written: on Code 128, Code 39, Codabar,
/// Code 93, ITF, DataBar, EAN-8, UPC-E and printed text, blurred or not, the margin was at
/// most 1.04; on 300 random runs of bars, blurred, it was at most 1.21, and at most 1.12
/// where the fit passed; on EAN-13s blurred by up to 1.2 modules and read right it was 1.45
/// and more, and 2.9-21 on the degraded set's readings.
enum BlurredUPCEAN {
    /// The fitted code's share of the profile's variance (1 − residual / variance).
    static let minimumFit: Float = 0.9
    /// The second-best valid code's residual over the best one's.
    static let minimumMargin: Float = 1.4

    /// A reading in the image's coordinates: the 13 digits (UPC-A with its leading 0), the
    /// symbol's ends along the rows and the band of rows it was read on.
    struct Reading: Equatable {
        var digits: [Int]
        var left: Double
        var right: Double
        var rows: ClosedRange<Int>

        /// The digits as EAN-13 text.
        var text: String { String(digits.map { Character(String($0)) }) }

        /// The reading as a barcode of a symbology in `asked` (UPC-A when its first digit is
        /// 0 and UPC-A is asked for), its corners mapped through `transform`; nil when
        /// neither is asked for.
        func barcode(asked: Set<Symbology>, _ transform: PointTransform) -> Barcode? {
            let (symbology, text) = RetailNormalization.normalize(.ean13, text, asked: asked)
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
    /// band's reading passes ``minimumFit`` and ``minimumMargin`` and no other band reads
    /// another code.
    static func read(_ g: ImageBuffer) -> Reading? {
        let w = g.width
        let h = g.height
        guard w >= 100, h >= 4, let bars = RegionFinder.barsExtent(g) else { return nil }
        var found: Reading?
        let half = max(1, h / 30)
        for (band, fraction) in [0.5, 0.3, 0.7].enumerated() {
            let y = min(h - 1 - half, max(half, Int(Double(h) * fraction)))
            let rows = (y - half)...(y + half)
            let profile = bandProfile(g, rows: rows)
            let (lefts, rights) = ends(profile, near: bars)
            guard !lefts.isEmpty, !rights.isEmpty else { continue }
            // Either way round: the better coarse fit goes on (a symbol upside down fits
            // the wrong way round no better than text does).
            // A position P (between columns) is w - 1 - P the other way round.
            let width = Float(w - 1)
            let reversed = Array(profile.reversed())
            let forward = coarse(profile, lefts: lefts, rights: rights)
            let backward = coarse(
                reversed,
                lefts: rights.map { width - $0 },
                rights: lefts.map { width - $0 }
            )
            let isForward =
                (forward.first?.score ?? .infinity) <= (backward.first?.score ?? .infinity)
            let starts = isForward ? forward : backward
            guard let bestStart = starts.first?.score else { continue }
            // Nothing like the symbol on the middle band: no other band is worth the work.
            // (EAN-13s blurred by up to 1.2 modules fitted at 0.12 and better; half the
            // unread bars of the degraded set's other symbologies, text and texture at 0.45
            // and worse.)
            if bestStart > 0.3, band == 0 { return nil }
            guard bestStart <= coarseLimit,
                let fit = refine(isForward ? profile : reversed, starts: starts)
            else { continue }
            let reading = Reading(
                digits: fit.digits,
                left: Double(isForward ? fit.left : width - fit.right),
                right: Double(isForward ? fit.right : width - fit.left),
                rows: rows
            )
            if let found, found.digits != reading.digits { return nil }
            if found == nil {
                found = reading
                // Clear-cut: no other band is asked. Otherwise one may contradict it.
                if fit.margin >= 2 * minimumMargin { return found }
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

    /// Modules: the left guard (3), six digits (7 each), the middle guard (5), six digits and
    /// the right guard: 95. Each digit position's first module.
    static let digitStarts: [Float] = [3, 10, 17, 24, 31, 38, 50, 57, 64, 71, 78, 85]
    static let samplesPerModule = 3
    static let samplesPerDigit = 21
    /// Each digit's place may move by up to 0.3 of a module (a curved label, a module width
    /// that drifts across a photographed symbol).
    static let shifts: [Float] = [-0.3, -0.15, 0, 0.15, 0.3]
    /// Blur widths (Gaussian sigma) in modules: 0.3, 0.4, ... 1.6.
    static let blurs: [Float] = (0..<14).map { 0.3 + 0.1 * Float($0) }

    /// The first digit's parity pattern (bit i set: digit i + 1 uses the G set).
    static let parities: [Int] = [
        0, 0b110100, 0b101100, 0b011100, 0b110010, 0b100110, 0b001110, 0b101010, 0b011010,
        0b010110,
    ]
    /// The L set's modules (1 = bar), left to right.
    static let lCodes: [[Int]] = [
        [0, 0, 0, 1, 1, 0, 1], [0, 0, 1, 1, 0, 0, 1], [0, 0, 1, 0, 0, 1, 1],
        [0, 1, 1, 1, 1, 0, 1], [0, 1, 0, 0, 0, 1, 1], [0, 1, 1, 0, 0, 0, 1],
        [0, 1, 0, 1, 1, 1, 1], [0, 1, 1, 1, 0, 1, 1], [0, 1, 1, 0, 1, 1, 1],
        [0, 0, 0, 1, 0, 1, 1],
    ]

    /// Every pattern blurred, sampled: for each blur and shift, 30 patterns (L 0-9, G 0-9,
    /// R 0-9) of ``samplesPerDigit`` samples in three 8-lane vectors (the last three lanes
    /// 0), with each pattern's sum and centred square sum.
    struct Templates {
        var values: [SIMD8<Float>]
        var sums: [Float]
        var spreads: [Float]

        static func index(blur: Int, shift: Int, pattern: Int) -> Int {
            (blur * BlurredUPCEAN.shifts.count + shift) * 30 + pattern
        }
    }

    static let templates: Templates = {
        let r = lCodes.map { $0.map { 1 - $0 } }
        let g = r.map { Array($0.reversed()) }
        let patterns = lCodes + g + r
        let n = samplesPerDigit
        var values: [SIMD8<Float>] = []
        var sums: [Float] = []
        var spreads: [Float] = []
        for sigma in blurs {
            for shift in shifts {
                for (index, bits) in patterns.enumerated() {
                    // The modules beside a digit are known: in the left half a bar before
                    // (the guard's or the previous digit's last) and a space after; in the
                    // right half a space before and a bar after.
                    let modules =
                        index < 20 ? [0, 1] + bits + [0, 0] : [1, 0] + bits + [1, 0]
                    var t = [Float](repeating: 0, count: 24)
                    for k in 0..<n {
                        let u = (Double(k) + 0.5) / Double(samplesPerModule) + Double(shift)
                        var v = 0.0
                        for (j, bit) in modules.enumerated() where bit == 1 {
                            let start = Double(j - 2)
                            v +=
                                phi((u - start) / Double(sigma))
                                - phi((u - start - 1) / Double(sigma))
                        }
                        t[k] = Float(v)
                    }
                    let sum = t.reduce(0, +)
                    for lane in 0..<3 { values.append(SIMD8(t[(8 * lane)..<(8 * lane + 8)])) }
                    sums.append(sum)
                    spreads.append(t.reduce(0) { $0 + $1 * $1 } - sum * sum / Float(n))
                }
            }
        }
        return Templates(values: values, sums: sums, spreads: spreads)
    }()

    /// The guards with the modules beside them that every symbol shares, as (first module,
    /// modules): the quiet zone, `101` and digit 1's first space; digit 6's last bar, `01010`
    /// and digit 7's first bar; digit 12's last space, `101` and the quiet zone.
    static let guardWindows: [(start: Int, modules: [Int])] = [
        (-2, [0, 0, 1, 0, 1, 0]), (44, [1, 0, 1, 0, 1, 0, 1]), (91, [0, 1, 0, 1, 0, 0]),
    ]

    /// The guard windows blurred and sampled (``samplesPerModule`` a module), for each blur
    /// and window: the samples, their sum and centred square sum.
    static let guardTemplates: [(values: [Float], sum: Float, spread: Float)] = {
        var result: [(values: [Float], sum: Float, spread: Float)] = []
        for sigma in blurs {
            for window in guardWindows {
                let n = window.modules.count * samplesPerModule
                var t = [Float](repeating: 0, count: n)
                for k in 0..<n {
                    let u = (Double(k) + 0.5) / Double(samplesPerModule)
                    var v = 0.0
                    for (j, bit) in window.modules.enumerated() where bit == 1 {
                        v +=
                            phi((u - Double(j)) / Double(sigma))
                            - phi((u - Double(j) - 1) / Double(sigma))
                    }
                    t[k] = Float(v)
                }
                let sum = t.reduce(0, +)
                result.append((t, sum, t.reduce(0) { $0 + $1 * $1 } - sum * sum / Float(n)))
            }
        }
        return result
    }()

    static func phi(_ z: Double) -> Double { 0.5 * (1 + erf(z / 2.0.squareRoot())) }

    /// Each digit position's residual for each pattern it may hold (left: L and G, 20;
    /// right: R, 10, in the first 10 of 20) at the symbol's ends `left` and `right` (pixels)
    /// and blur index `blur`, the best over the shifts (or none), with the profile's variance
    /// about each digit's mean.
    static func scores(
        _ p: [Float],
        left: Float,
        right: Float,
        blur: Int,
        shifting: Bool,
        into out: inout [Float]
    ) -> (variance: Float, guards: Float) {
        let m = (right - left) / 95
        let n = samplesPerDigit
        let shiftRange = shifting ? 0..<shifts.count : 2..<3
        let last = Float(p.count - 1)
        var total: Float = 0
        for i in 0..<(12 * 20) { out[i] = .infinity }
        templates.values.withUnsafeBufferPointer { t in
            p.withUnsafeBufferPointer { p in
                for i in 0..<12 {
                    for s in shiftRange {
                        let base = left + (digitStarts[i] + shifts[s]) * m
                        var o = (SIMD8<Float>(), SIMD8<Float>(), SIMD8<Float>())
                        var so: Float = 0
                        var soo: Float = 0
                        for k in 0..<n {
                            let x = min(last, max(0, base + (Float(k) + 0.5) / 3 * m))
                            let x0 = Int(x)
                            let x1 = min(x0 + 1, p.count - 1)
                            let f = x - Float(x0)
                            let v = p[x0] + (p[x1] - p[x0]) * f
                            switch k / 8 {
                            case 0: o.0[k] = v
                            case 1: o.1[k - 8] = v
                            default: o.2[k - 16] = v
                            }
                            so += v
                            soo += v * v
                        }
                        let vo = soo - so * so / Float(n)
                        if s == 2 { total += vo }
                        let first = i < 6 ? 0 : 20
                        let count = i < 6 ? 20 : 10
                        for j in 0..<count {
                            let ti = Templates.index(blur: blur, shift: s, pattern: first + j)
                            let sot = (o.0 * t[3 * ti] + o.1 * t[3 * ti + 1] + o.2 * t[3 * ti + 2])
                                .sum()
                            // Bars are dark: a fit with the pattern's contrast the wrong way
                            // round explains nothing.
                            let c = sot - so * templates.sums[ti] / Float(n)
                            let r = c < 0 ? vo - c * c / templates.spreads[ti] : vo
                            if r < out[i * 20 + j] { out[i * 20 + j] = r }
                        }
                    }
                }
            }
        }
        // The guards: fixed patterns, no shift.
        var guards: Float = 0
        p.withUnsafeBufferPointer { p in
            for (w, window) in guardWindows.enumerated() {
                let template = guardTemplates[blur * guardWindows.count + w]
                let n = template.values.count
                let base = left + Float(window.start) * m
                var so: Float = 0
                var soo: Float = 0
                var sot: Float = 0
                for k in 0..<n {
                    let x = min(last, max(0, base + (Float(k) + 0.5) / 3 * m))
                    let x0 = Int(x)
                    let x1 = min(x0 + 1, p.count - 1)
                    let v = p[x0] + (p[x1] - p[x0]) * (x - Float(x0))
                    so += v
                    soo += v * v
                    sot += v * template.values[k]
                }
                let vo = soo - so * so / Float(n)
                let c = sot - so * template.sum / Float(n)
                total += vo
                guards += c < 0 ? vo - c * c / template.spread : vo
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
        var margin: Float
    }

    /// A place on the grid of ends and blurs, with its fit (residual over variance).
    typealias Start = (score: Float, left: Float, right: Float, blur: Int)

    /// The grid: ends within 1.5 modules of each pair of candidates (95 modules of at least
    /// a pixel), four blurs; best first.
    static func coarse(_ p: [Float], lefts: [Float], rights: [Float]) -> [Start] {
        var out = [Float](repeating: 0, count: 12 * 20)
        var found: [Start] = []
        for l0 in lefts {
            for r0 in rights where r0 - l0 >= 95 {
                let m0 = (r0 - l0) / 95
                for dl in stride(from: -1.5 as Float, through: 1.5, by: 0.75) {
                    for dr in stride(from: -1.5 as Float, through: 1.5, by: 0.75) {
                        for blur in [1, 4, 7, 10] {
                            let l = l0 + dl * m0
                            let r = r0 + dr * m0
                            let fit = scores(
                                p,
                                left: l,
                                right: r,
                                blur: blur,
                                shifting: false,
                                into: &out
                            )
                            guard fit.variance > 0 else { continue }
                            found.append(((bestSum(out) + fit.guards) / fit.variance, l, r, blur))
                        }
                    }
                }
            }
        }
        return found.sorted { $0.score < $1.score }
    }

    /// The two best places of the grid refined (ends by a quarter, then an eighth of a
    /// module, the blur by 0.1, digits shifted), then the code: nil unless it passes
    /// ``minimumFit`` and ``minimumMargin``.
    static func refine(_ p: [Float], starts: [Start]) -> Fit? {
        var out = [Float](repeating: 0, count: 12 * 20)
        var best: Start?
        for start in starts.prefix(2) {
            let m0 = (start.right - start.left) / 95
            var current = start
            current.score = .infinity
            for step in [0.375, 0.125] as [Float] {
                var next = current
                for dl in [-step, 0, step] {
                    for dr in [-step, 0, step] {
                        for db in -1...1 {
                            let blur = current.blur + db
                            guard blurs.indices.contains(blur) else { continue }
                            let l = current.left + dl * m0
                            let r = current.right + dr * m0
                            let fit = scores(
                                p,
                                left: l,
                                right: r,
                                blur: blur,
                                shifting: step < 0.2,
                                into: &out
                            )
                            let s = bestSum(out) + fit.guards
                            if s < next.score { next = (s, l, r, blur) }
                        }
                    }
                }
                current = next
            }
            if current.score < (best?.score ?? .infinity) { best = current }
        }
        guard let best else { return nil }
        let final = scores(
            p,
            left: best.left,
            right: best.right,
            blur: best.blur,
            shifting: true,
            into: &out
        )
        let codes = twoBest(out)
        guard codes.count == 2, final.variance > 0 else { return nil }
        let fit = 1 - (codes[0].score + final.guards) / final.variance
        let margin = codes[1].score / max(codes[0].score, 1e-6)
        guard fit >= minimumFit, margin >= minimumMargin else { return nil }
        return Fit(digits: codes[0].digits, left: best.left, right: best.right, margin: margin)
    }

    /// The sum of each position's best pattern: the fit with no check digit.
    static func bestSum(_ out: [Float]) -> Float {
        var sum: Float = 0
        for i in 0..<12 {
            let count = i < 6 ? 20 : 10
            var best = Float.infinity
            for j in 0..<count where out[i * 20 + j] < best { best = out[i * 20 + j] }
            sum += best
        }
        return sum
    }

    /// The two codes (13 digits) of least residual that pass the check digit, with each first
    /// digit's parity pattern: dynamic programming over the weighted sum modulo 10, two paths
    /// kept per state.
    static func twoBest(_ out: [Float]) -> [(score: Float, digits: [Int])] {
        var results: [(score: Float, digits: [Int])] = []
        for first in 0..<10 {
            // state: the weighted sum so far modulo 10 -> up to two (score, digits).
            var states = [[(score: Float, digits: [Int])]](repeating: [], count: 10)
            states[first % 10] = [(0, [first])]
            for i in 0..<12 {
                let weight = i % 2 == 0 ? 3 : 1
                let offset = i < 6 && parities[first] & (1 << i) != 0 ? 10 : 0
                var next = [[(score: Float, digits: [Int])]](repeating: [], count: 10)
                for state in 0..<10 {
                    for path in states[state] {
                        for digit in 0..<10 {
                            let score = path.score + out[i * 20 + offset + digit]
                            let to = (state + weight * digit) % 10
                            insert((score, path.digits + [digit]), into: &next[to])
                        }
                    }
                }
                states = next
            }
            for path in states[0] { insert(path, into: &results) }
        }
        return results
    }

    /// Keeps the two lowest scores in `list`.
    static func insert(
        _ path: (score: Float, digits: [Int]),
        into list: inout [(score: Float, digits: [Int])]
    ) {
        if list.count < 2 {
            list.append(path)
            if list.count == 2, list[1].score < list[0].score { list.swapAt(0, 1) }
        } else if path.score < list[1].score {
            list[1] = path
            if list[1].score < list[0].score { list.swapAt(0, 1) }
        }
    }
}
