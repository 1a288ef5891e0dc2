import Foundation
import ScannerImages

/// A part of an image that looks like a barcode: many strong edges, either in one direction
/// (the bars of a 1D code) or in every direction (the modules of a 2D code).
struct CandidateRegion: Sendable, Equatable {
    /// The region in the analysed image's coordinates (tile-aligned, clipped to the image).
    var box: PixelRect
    /// The edges run mostly one way: bars.
    var isLinear: Bool
    /// The direction across the bars in degrees, in (-90, 90]: 0 for upright bars (edges
    /// vary along x), ±90 for bars lying horizontally.
    var angle: Double
    /// How strongly textured the region is: summed edge energy above the image's floor.
    var score: Double
    /// How many analysis tiles it covers.
    var tiles: Int
    /// Mean squared pixel difference per pixel: a proxy for contrast × edge density.
    var energy: Double
    /// Share of the edge energy that is oriented (1 for perfect bars, near 0 for noise).
    var coherence: Double
}

/// Finds candidate barcode regions cheaply: per tile of 8×8 pixels (sampled on large
/// images), the structure tensor of the pixel differences; tiles with strong edges are
/// grouped into regions, and each region is called linear when its summed tensor has one
/// dominant direction. Costs about one read of the pixels; no allocation per pixel.
enum RegionFinder {
    /// Tile side in sampled pixels.
    static let tile = 8

    /// Regions of `g` (a grey image) in decreasing order of score, at most `limit`, leaving
    /// out tiles whose centre lies in one of `excluded` (symbols already decoded).
    static func regions(
        in g: ImageBuffer,
        excluding excluded: [PixelRect] = [],
        limit: Int = 8
    ) -> [CandidateRegion] {
        let field = TensorField(g)
        return field.regions(excluding: excluded, limit: limit)
    }

    /// Per-tile sums of dx², dy², dx·dy over a grid covering the image.
    struct TensorField {
        let columns: Int
        let rows: Int
        /// Image pixels per tile side (tile × sampling step).
        let cell: Int
        let imageWidth: Int
        let imageHeight: Int
        var xx: [Float]
        var yy: [Float]
        var xy: [Float]

        init(_ g: ImageBuffer) {
            imageWidth = g.width
            imageHeight = g.height
            // Sample every `step`-th pixel of images whose long side passes ~1200 px, so the
            // analysis costs about the same on a 12 MP photo as on a 1 MP one.
            let step = max(1, max(g.width, g.height) / 1200)
            cell = RegionFinder.tile * step
            columns = max(1, g.width / cell)
            rows = max(1, g.height / cell)
            xx = [Float](repeating: 0, count: columns * rows)
            yy = xx
            xy = xx
            let n = RegionFinder.tile
            let stride = g.stride
            let w = g.width
            let h = g.height
            g.pixels.withUnsafeBufferPointer { p in
                xx.withUnsafeMutableBufferPointer { sxx in
                    yy.withUnsafeMutableBufferPointer { syy in
                        xy.withUnsafeMutableBufferPointer { sxy in
                            for ty in 0..<rows {
                                for tx in 0..<columns {
                                    var axx = 0
                                    var ayy = 0
                                    var axy = 0
                                    for j in 0..<n {
                                        let y = ty * cell + j * step
                                        guard y + 1 < h else { break }
                                        let row = y * stride
                                        for i in 0..<n {
                                            let x = tx * cell + i * step
                                            guard x + 1 < w else { break }
                                            let v = Int(p[row + x])
                                            let dx = Int(p[row + x + 1]) - v
                                            let dy = Int(p[row + stride + x]) - v
                                            axx += dx * dx
                                            ayy += dy * dy
                                            axy += dx * dy
                                        }
                                    }
                                    let t = ty * columns + tx
                                    sxx[t] = Float(axx)
                                    syy[t] = Float(ayy)
                                    sxy[t] = Float(axy)
                                }
                            }
                        }
                    }
                }
            }
        }

        /// The share of oriented edge energy over the tiles whose centre lies in `rect`
        /// (1 for bars, near 0 for noise), or nil when fewer than two tiles do.
        func coherence(in rect: PixelRect) -> Double? {
            let c0 = max(0, (rect.x - cell / 2 + cell - 1) / cell)
            let c1 = min(columns - 1, (rect.x + rect.width - cell / 2) / cell)
            let r0 = max(0, (rect.y - cell / 2 + cell - 1) / cell)
            let r1 = min(rows - 1, (rect.y + rect.height - cell / 2) / cell)
            guard c0 <= c1, r0 <= r1, (c1 - c0 + 1) * (r1 - r0 + 1) >= 2 else { return nil }
            var (a, b, c) = (Float(0), Float(0), Float(0))
            for ty in r0...r1 {
                for tx in c0...c1 {
                    let t = ty * columns + tx
                    a += xx[t]
                    b += yy[t]
                    c += xy[t]
                }
            }
            guard a + b > 0 else { return 0 }
            return Double(((a - b) * (a - b) + 4 * c * c).squareRoot() / (a + b))
        }

        /// The mean edge energy per pixel of the tiles whose centre lies in `rect` (the unit of
        /// ``CandidateRegion/energy``), or nil when none does.
        func energy(in rect: PixelRect) -> Double? {
            let c0 = max(0, (rect.x - cell / 2 + cell - 1) / cell)
            let c1 = min(columns - 1, (rect.x + rect.width - cell / 2) / cell)
            let r0 = max(0, (rect.y - cell / 2 + cell - 1) / cell)
            let r1 = min(rows - 1, (rect.y + rect.height - cell / 2) / cell)
            guard c0 <= c1, r0 <= r1 else { return nil }
            var sum = Float(0)
            for ty in r0...r1 {
                for tx in c0...c1 { sum += xx[ty * columns + tx] + yy[ty * columns + tx] }
            }
            let tiles = Float((c1 - c0 + 1) * (r1 - r0 + 1))
            return Double(sum / (tiles * Float(RegionFinder.tile * RegionFinder.tile)))
        }

        func regions(excluding excluded: [PixelRect], limit: Int) -> [CandidateRegion] {
            let count = columns * rows
            guard count >= 4 else { return [] }
            let perTile = Float(RegionFinder.tile * RegionFinder.tile)
            // Energy per pixel of each tile, and of its 3×3 neighbourhood's summed tensor
            // (orientation needs more samples than one tile gives).
            var energy = [Float](repeating: 0, count: count)
            var oriented = [Float](repeating: 0, count: count)
            for t in 0..<count { energy[t] = (xx[t] + yy[t]) / perTile }
            for ty in 0..<rows {
                for tx in 0..<columns {
                    var a: Float = 0
                    var b: Float = 0
                    var c: Float = 0
                    var k: Float = 0
                    for j in max(0, ty - 1)...min(rows - 1, ty + 1) {
                        for i in max(0, tx - 1)...min(columns - 1, tx + 1) {
                            let t = j * columns + i
                            a += xx[t]
                            b += yy[t]
                            c += xy[t]
                            k += 1
                        }
                    }
                    oriented[ty * columns + tx] =
                        ((a - b) * (a - b) + 4 * c * c).squareRoot() / (k * perTile)
                }
            }
            // The image's own texture level: the lower quartile of its tiles (a symbol may
            // fill most of the picture). Candidates stand well above it (strong tiles seed a
            // region), and regions grow through tiles that stand above it at all (weak), so
            // a low-contrast symbol is found whole rather than in pieces (hysteresis).
            let backgroundEnergy = Self.quantile(energy, 0.25)
            let backgroundOriented = Self.quantile(oriented, 0.25)
            let floor: Float = 16
            var strong = [Bool](repeating: false, count: count)
            var weak = [Bool](repeating: false, count: count)
            for t in 0..<count {
                let bars = oriented[t] >= 0.5 * energy[t] && energy[t] >= floor
                strong[t] =
                    energy[t] >= max(2 * floor, 4 * backgroundEnergy)
                    || (bars && oriented[t] >= max(floor, 4 * backgroundOriented))
                weak[t] =
                    strong[t] || energy[t] >= max(floor, 2 * backgroundEnergy)
                    || (bars && oriented[t] >= max(floor / 2, 2 * backgroundOriented))
            }
            for rect in excluded {
                // Tiles whose centre is inside the rectangle.
                let c0 = max(0, (rect.x - cell / 2 + cell - 1) / cell)
                let c1 = min(columns - 1, (rect.x + rect.width - cell / 2) / cell)
                let r0 = max(0, (rect.y - cell / 2 + cell - 1) / cell)
                let r1 = min(rows - 1, (rect.y + rect.height - cell / 2) / cell)
                guard c0 <= c1, r0 <= r1 else { continue }
                for ty in r0...r1 {
                    for tx in c0...c1 {
                        strong[ty * columns + tx] = false
                        weak[ty * columns + tx] = false
                    }
                }
            }
            let mask = weak
            // Group with 8-connectivity.
            var label = [Int32](repeating: -1, count: count)
            var found: [CandidateRegion] = []
            var queue: [Int] = []
            queue.reserveCapacity(64)
            for start in 0..<count where strong[start] && label[start] < 0 {
                let id = Int32(found.count)
                label[start] = id
                queue.removeAll(keepingCapacity: true)
                queue.append(start)
                var head = 0
                var (x0, y0, x1, y1) = (columns, rows, 0, 0)
                var (a, b, c) = (Float(0), Float(0), Float(0))
                var sumEnergy: Float = 0
                while head < queue.count {
                    let t = queue[head]
                    head += 1
                    let tx = t % columns
                    let ty = t / columns
                    x0 = min(x0, tx)
                    y0 = min(y0, ty)
                    x1 = max(x1, tx)
                    y1 = max(y1, ty)
                    a += xx[t]
                    b += yy[t]
                    c += xy[t]
                    sumEnergy += energy[t]
                    // Neighbours up to two tiles away: the flat insides of large modules
                    // and glare on part of a symbol leave gaps of a tile.
                    for j in max(0, ty - 2)...min(rows - 1, ty + 2) {
                        for i in max(0, tx - 2)...min(columns - 1, tx + 2) {
                            let u = j * columns + i
                            if mask[u], label[u] < 0 {
                                label[u] = id
                                queue.append(u)
                            }
                        }
                    }
                }
                let tiles = queue.count
                // Too small for any symbol: 3×2 tiles is about a 21-module QR code at one
                // pixel per module, or the height of a squat 1D code.
                guard tiles >= 5, x1 - x0 >= 1, y1 - y0 >= 1 else { continue }
                let total = a + b
                let coherence = total > 0 ? ((a - b) * (a - b) + 4 * c * c).squareRoot() / total : 0
                // Gradient direction: 0 when intensity varies along x (upright bars).
                let angle = Double(0.5 * atan2(2 * c, a - b)) * 180 / .pi
                let box = PixelRect(
                    x: x0 * cell,
                    y: y0 * cell,
                    width: min(imageWidth, (x1 + 1) * cell) - x0 * cell,
                    height: min(imageHeight, (y1 + 1) * cell) - y0 * cell
                )
                let meanEnergy = sumEnergy / Float(tiles)
                found.append(
                    CandidateRegion(
                        box: box,
                        // 2D symbols measure below 0.2; bars 0.5-0.9, lower for faint
                        // ones whose region takes in their digits.
                        isLinear: coherence >= 0.3,
                        angle: angle,
                        score: Double(sumEnergy - backgroundEnergy * Float(tiles)),
                        tiles: tiles,
                        energy: Double(meanEnergy),
                        coherence: Double(coherence)
                    )
                )
            }
            return Array(found.sorted { $0.score > $1.score }.prefix(limit))
        }

        /// The value below which `q` of `values` lie (the grids are small: a sort is cheap).
        static func quantile(_ values: [Float], _ q: Double) -> Float {
            guard !values.isEmpty else { return 0 }
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
        }
    }
}

extension RegionFinder {
    /// The direction across the bars of `g` (degrees in [-90, 90), 0 for upright bars), or
    /// nil when the image is too small to tell: the angle at which projecting the pixels
    /// along the bars keeps the most contrast (the variance between the projection's 1 px
    /// bins). The texture tensor's angle is a mean over the region and drifts by 10-20°
    /// when digits, a PDF417's data columns or background share it; the projection is
    /// sharp only when the bars line up with it, so small residual tilts (which cost a
    /// symbol that is long and short a row crossing all its bars) are measured too.
    ///
    /// With `estimate` (the texture's angle), only angles within 35° of it are tried: a
    /// long, short symbol on a light ground also projects sharply across its length (the
    /// dark band against the ground), 90° away from its bars.
    static func barAngle(_ g: ImageBuffer, near estimate: Double? = nil) -> Double? {
        guard g.width >= 16, g.height >= 16 else { return nil }
        // About 8,000 samples, whatever the region's size.
        let step = max(1, Int((Double(g.width * g.height) / 8_000).squareRoot()))
        var xs: [Float] = []
        var ys: [Float] = []
        var vs: [Float] = []
        let cx = Float(g.width) / 2
        let cy = Float(g.height) / 2
        // High-passed (minus a 9×9 mean): the ground and the symbol's dark band project to
        // nothing, so bars a few dozen pixels long in a wide picture still stand out.
        let smooth = GreyOps.boxBlurred(g, radius: 4)
        g.pixels.withUnsafeBufferPointer { p in
            for y in Swift.stride(from: 0, to: g.height, by: step) {
                for x in Swift.stride(from: 0, to: g.width, by: step) {
                    xs.append(Float(x) - cx)
                    ys.append(Float(y) - cy)
                    vs.append(Float(p[y * g.stride + x]) - Float(smooth.pixels[y * g.width + x]))
                }
            }
        }
        let radius = Int((Double(g.width * g.width + g.height * g.height)).squareRoot() / 2) + 2
        var sums = [Float](repeating: 0, count: 2 * radius + 1)
        var counts = [Float](repeating: 0, count: 2 * radius + 1)
        func score(_ degrees: Double) -> Float {
            let r = degrees * .pi / 180
            let c = Float(cos(r))
            let s = Float(sin(r))
            for i in sums.indices {
                sums[i] = 0
                counts[i] = 0
            }
            // The nearest bin, halves away from zero as `rounded()` does, without its call
            // into libm (a baseline x86-64 build has no rounding instruction): 8,000
            // samples at 31 angles a region.
            sums.withUnsafeMutableBufferPointer { sum in
                counts.withUnsafeMutableBufferPointer { count in
                    for i in xs.indices {
                        let t = xs[i] * c + ys[i] * s
                        let bin = radius + Int(t + (t < 0 ? -0.5 : 0.5))
                        sum[bin] += vs[i]
                        count[bin] += 1
                    }
                }
            }
            // Between-bin variance (times the sample count), bins of few samples left out:
            // the corners of the projection say nothing about the bars.
            var total: Float = 0
            var weighted: Float = 0
            var n: Float = 0
            for i in sums.indices where counts[i] >= 4 {
                total += sums[i]
                weighted += sums[i] * sums[i] / counts[i]
                n += counts[i]
            }
            return n > 0 ? weighted - total * total / n : 0
        }
        var best = 0.0
        var bestScore = -Float.infinity
        let range = estimate.map { ($0 - 35, $0 + 35) } ?? (-90.0, 90.0)
        for degrees in Swift.stride(from: range.0, to: range.1, by: 4) {
            let s = score(degrees)
            if s > bestScore {
                bestScore = s
                best = degrees
            }
        }
        let coarse = best
        for degrees in Swift.stride(from: coarse - 3, through: coarse + 3, by: 0.5) {
            let s = score(degrees)
            if s > bestScore {
                bestScore = s
                best = degrees
            }
        }
        // Back into [-90, 90): a window near ±90 reaches past it.
        var angle = best
        while angle >= 90 { angle -= 180 }
        while angle < -90 { angle += 180 }
        return angle
    }
}

extension RegionFinder {
    /// `g` (upright bars: rows cross them) with everything left and right of the bars
    /// painted in the symbol's light level, or nil when no run of bars stands out.
    ///
    /// A label cut close to its bars, or bars printed up to a label's edge on a textured
    /// surface, has no quiet zone, and both decoders want one before the start pattern:
    /// the symbol is plain to see and reads from a tight crop, not from the photo.
    static func withQuietZones(_ g: ImageBuffer) -> ImageBuffer? {
        let w = g.width
        let h = g.height
        guard let bars = barsExtent(g) else { return nil }
        let left = bars.lowerBound
        let right = bars.upperBound
        // Nothing to paint: the bars reach both sides.
        guard left > 1 || right < w - 2 else { return nil }
        // The light level: the 90th percentile of the bars' columns.
        var histogram = [Int](repeating: 0, count: 256)
        for y in Swift.stride(from: 0, to: h, by: 2) {
            for x in Swift.stride(from: left, through: right, by: 2) {
                histogram[Int(g.pixels[y * g.stride + x])] += 1
            }
        }
        let total = histogram.reduce(0, +)
        var light = 255
        var above = 0
        while light > 0, above + histogram[light] < total / 10 {
            above += histogram[light]
            light -= 1
        }
        var out = [UInt8](repeating: UInt8(light), count: w * h)
        // score[x] is the step from column x to x + 1: keep what lies between the steps.
        let keepFrom = left + 1
        let keepTo = right
        for y in 0..<h {
            for x in keepFrom...keepTo { out[y * w + x] = g.pixels[y * g.stride + x] }
        }
        return GreyOps.packed(width: w, height: h, out)
    }

    /// The columns of `g`'s run of bars (upright bars: rows cross them): from the step into
    /// the first dark bar to the step out of the last (a column's step is to the next
    /// column), or nil when no run of bars stands out.
    ///
    /// Columns score Σ(|dx| − |dy|) over the rows: bar edges run the whole column (|dx|
    /// high, |dy| low), noise and texture score about zero either way.
    static func barsExtent(_ g: ImageBuffer) -> ClosedRange<Int>? {
        let w = g.width
        let h = g.height
        guard w >= 32, h >= 8 else { return nil }
        var score = [Int](repeating: 0, count: w)
        // The signed step: negative where the column after is darker (into a bar).
        var step = [Int](repeating: 0, count: w)
        g.pixels.withUnsafeBufferPointer { p in
            for y in 0..<(h - 1) {
                let row = y * g.stride
                for x in 0..<(w - 1) {
                    let v = Int(p[row + x])
                    let dx = Int(p[row + x + 1]) - v
                    score[x] += abs(dx) - abs(Int(p[row + g.stride + x]) - v)
                    step[x] += dx
                }
            }
        }
        // Smoothed over about two wide bars, so the insides of bars and spaces do not split
        // the run; the run around the strongest column, across gaps up to one window.
        let r = max(8, w / 50)
        var smooth = [Int](repeating: 0, count: w)
        var sum = 0
        for x in 0..<min(w, r) { sum += score[x] }
        for x in 0..<w {
            if x + r < w { sum += score[x + r] }
            if x - r - 1 >= 0 { sum -= score[x - r - 1] }
            smooth[x] = sum
        }
        guard let peak = smooth.indices.max(by: { smooth[$0] < smooth[$1] }), smooth[peak] > 0
        else { return nil }
        let threshold = smooth[peak] / 4
        var start = peak
        var end = peak
        var gap = 0
        var x = peak
        while x > 0 {
            x -= 1
            if smooth[x] > threshold {
                start = x
                gap = 0
            } else {
                gap += 1
                if gap > 2 * r { break }
            }
        }
        gap = 0
        x = peak
        while x < w - 1 {
            x += 1
            if smooth[x] > threshold {
                end = x
                gap = 0
            } else {
                gap += 1
                if gap > 2 * r { break }
            }
        }
        // The first and last bar edges inside the run: columns whose own score is a third
        // of the run's strong edges (the 90th percentile), the first into a dark bar and the
        // last out of one. A label's own edges on a darker ground step the other way: a
        // label cut a module from its bars keeps its edge, and the ground's grey beyond it
        // would read as a bar before the start pattern.
        let run = score[start...end].sorted()
        let strong = run[run.count * 9 / 10]
        guard strong > 0 else { return nil }
        guard
            let left = (start...end).first(where: { score[$0] * 3 > strong && step[$0] < 0 }),
            let right = (start...end).last(where: { score[$0] * 3 > strong && step[$0] > 0 }),
            right - left >= 16
        else { return nil }
        return left...right
    }
}
