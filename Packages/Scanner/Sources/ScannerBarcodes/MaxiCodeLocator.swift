import Foundation
import ScannerImages

/// Finds MaxiCode symbols by their bullseye and reads them at any angle.
///
/// ZXing-C++ 3.1.1 reads MaxiCode only as a "pure" image: the symbol upright, alone, filling
/// its bounding box. A photo, a label with text around the symbol or a turned copy gives it
/// nothing. This locator finds the bullseye (three dark rings around a light disc: along any
/// line through its centre, eleven runs of about equal width with a wider light one in the
/// middle), measures the rings in four directions (their ellipse gives the view's affine
/// distortion and the hexagon pitch), finds the symbol's turn from its fixed orientation
/// modules, then samples the 33 × 30 hexagon grid and draws it upright and pure for ZXing's
/// reader, whose Reed-Solomon check rejects a wrong turn, pitch or centre.
///
/// Geometry (ISO/IEC 16023, as zint draws it): the bullseye's centre is the centre of even
/// row 16, column 14; from the outer edge of its outer dark ring to the opposite edge is
/// 9.18 hexagon pitches; rows are √3/2 of a pitch apart and odd rows sit half a pitch right.
enum MaxiCodeLocator {
    /// A bullseye: its centre and the ellipse of its outer ring in the image.
    struct Bullseye: Equatable {
        var x: Double
        var y: Double
        /// The outer ring's diameter across, in pixels: 0°, 45°, 90°, 135° from the x axis.
        var spans: [Double]
        /// Rows whose runs matched, before merging.
        var hits: Int

        /// The mean diameter, in pixels.
        var span: Double { spans.reduce(0, +) / Double(spans.count) }
    }

    static let rows = 33
    static let columns = 30
    /// The outer ring's diameter, in hexagon pitches, as ``DarkMap`` measures it: 9.18 as
    /// drawn, less what its threshold (below the local mean) takes off dark edges
    /// (0.944-0.953 of it measured on zint's symbols from 9 to 20 pixels a pitch).
    static let bullseyeDiameter = 8.75
    /// Modules that are always dark and always light (orientation patterns and unused
    /// corners), as (column, row): from ZXing-C++'s MaxiCode bit table.
    static let fixedDark: [(Int, Int)] = [
        (28, 0), (29, 0), (10, 9), (11, 9), (11, 10), (7, 15), (8, 16), (20, 16), (20, 17),
        (10, 22), (17, 22), (10, 23), (17, 23),
    ]
    static let fixedLight: [(Int, Int)] = [
        (17, 9), (17, 10), (18, 10), (7, 16), (21, 16), (11, 22), (16, 23),
    ]
    // MARK: Binarization

    /// The half-width of the window a pixel is compared with: an eighth of the image's
    /// smaller side, wider than any ring of a symbol that fits in it.
    static func windowRadius(_ grey: ImageBuffer) -> Int {
        max(7, min(grey.width, grey.height) / 16)
    }

    /// Whether a pixel of value `v` is dark against a window of `count` pixels summing to
    /// `total`: below the mean by a sixteenth of it and 4 levels (flat areas are light).
    @inline(__always)
    static func isDark(_ v: Int, total: Int, count: Int) -> Bool {
        (v + 4) * 16 * count < total * 15
    }

    /// Dark pixels of a region of the image, each against the mean of a square window
    /// around it: what the grid is sampled from.
    struct DarkMap {
        let x0: Int
        let y0: Int
        let width: Int
        let height: Int
        private(set) var bits: [UInt8]

        init(_ grey: ImageBuffer, region: PixelRect, radius: Int) {
            x0 = region.x
            y0 = region.y
            width = region.width
            height = region.height
            let w = width
            let h = height
            bits = [UInt8](repeating: 0, count: w * h)
            // Integral image of the region, one row wider and taller; wrapping sums keep
            // every window's own total exact.
            var integral = [UInt32](repeating: 0, count: (w + 1) * (h + 1))
            grey.pixels.withUnsafeBufferPointer { px in
                integral.withUnsafeMutableBufferPointer { sum in
                    for y in 0..<h {
                        var row: UInt32 = 0
                        let src = (y + region.y) * grey.stride + region.x
                        for x in 0..<w {
                            row &+= UInt32(px[src + x])
                            sum[(y + 1) * (w + 1) + x + 1] = sum[y * (w + 1) + x + 1] &+ row
                        }
                    }
                }
            }
            integral.withUnsafeBufferPointer { sum in
                grey.pixels.withUnsafeBufferPointer { px in
                    bits.withUnsafeMutableBufferPointer { out in
                        for y in 0..<h {
                            let ya = max(0, y - radius)
                            let yb = min(h, y + radius + 1)
                            for x in 0..<w {
                                let xa = max(0, x - radius)
                                let xb = min(w, x + radius + 1)
                                let total = Int(
                                    sum[yb * (w + 1) + xb] &+ sum[ya * (w + 1) + xa]
                                        &- sum[ya * (w + 1) + xb] &- sum[yb * (w + 1) + xa]
                                )
                                let v = Int(px[(y + region.y) * grey.stride + region.x + x])
                                if MaxiCodeLocator.isDark(
                                    v,
                                    total: total,
                                    count: (yb - ya) * (xb - xa)
                                ) {
                                    out[y * w + x] = 1
                                }
                            }
                        }
                    }
                }
            }
        }

        /// Whether the pixel at image point (x, y) is dark; outside the region it is not.
        @inline(__always)
        func isDark(_ x: Int, _ y: Int) -> Bool {
            let (rx, ry) = (x - x0, y - y0)
            return rx >= 0 && ry >= 0 && rx < width && ry < height && bits[ry * width + rx] != 0
        }
    }

    /// Dark flags (1) of `values`, pixels along a line, each against the mean of the
    /// `radius` pixels either side of it on the line.
    static func darkAlong(_ values: [UInt8], radius: Int, into flags: inout [UInt8]) {
        let n = values.count
        if flags.count != n { flags = [UInt8](repeating: 0, count: n) }
        guard n > 0 else { return }
        values.withUnsafeBufferPointer { v in
            flags.withUnsafeMutableBufferPointer { out in
                var total = 0
                var hi = min(n, radius + 1)  // the window is [i - radius, hi) clipped
                for i in 0..<hi { total += Int(v[i]) }
                for i in 0..<n {
                    if i + radius < n {
                        if i > 0 { total += Int(v[i + radius]) }
                        hi = i + radius + 1
                    }
                    if i - radius - 1 >= 0 { total -= Int(v[i - radius - 1]) }
                    let lo = max(0, i - radius)
                    out[i] = isDark(Int(v[i]), total: total, count: hi - lo) ? 1 : 0
                }
            }
        }
    }

    // MARK: Finding bullseyes

    /// Up to `limit` bullseyes inside `boxes` (parts of `grey`), those matched by most rows
    /// first.
    static func bullseyes(in grey: ImageBuffer, within boxes: [PixelRect], limit: Int = 3)
        -> [Bullseye]
    {
        var found: [Bullseye] = []
        let radius = windowRadius(grey)
        var runs: [Int] = []
        var values: [UInt8] = []
        var flags: [UInt8] = []
        runs.reserveCapacity(256)
        for box in boxes {
            guard let box = box.clipped(toWidth: grey.width, height: grey.height),
                box.width >= 12, box.height >= 12
            else { continue }
            // Every other row: a bullseye of 4-pixel hexagons has a light centre 5 rows high.
            for y in Swift.stride(from: box.y, to: box.y + box.height, by: 2) {
                if values.count != box.width { values = [UInt8](repeating: 0, count: box.width) }
                grey.pixels.withUnsafeBufferPointer { px in
                    values.withUnsafeMutableBufferPointer { row in
                        for x in 0..<box.width { row[x] = px[y * grey.stride + box.x + x] }
                    }
                }
                darkAlong(values, radius: radius, into: &flags)
                // Run lengths along the row, starting with a light run (maybe empty).
                runs.removeAll(keepingCapacity: true)
                var colour: UInt8 = 0
                var length = 0
                for flag in flags {
                    if flag == colour {
                        length += 1
                    } else {
                        runs.append(length)
                        colour ^= 1
                        length = 1
                    }
                }
                runs.append(length)
                // Runs at odd indices are dark. A window of 11 starts at a dark run.
                guard runs.count >= 12 else { continue }
                var start = box.x + runs[0]
                var i = 1
                while i + 10 < runs.count {
                    if let centre = pattern(runs, at: i),
                        let eye = confirm(
                            grey,
                            radius: radius,
                            x: Double(start) + centre,
                            y: Double(y),
                            span: (i..<(i + 11)).reduce(0) { $0 + runs[$1] }
                        )
                    {
                        merge(eye, into: &found)
                    }
                    start += runs[i] + runs[i + 1]
                    i += 2
                }
            }
        }
        return found.sorted { $0.hits > $1.hits }.prefix(limit).map {
            polished($0, in: grey, radius: radius)
        }
    }

    /// The bullseye measured again from points around its centre (the rows' step leaves few
    /// matches on a small one): the mean of every crossing that confirms it.
    static func polished(_ eye: Bullseye, in grey: ImageBuffer, radius: Int) -> Bullseye {
        let reach = max(1.0, eye.span / bullseyeDiameter * 0.35)
        var sum = Bullseye(x: 0, y: 0, spans: [0, 0, 0, 0], hits: 0)
        for oy in [-1.0, -0.5, 0, 0.5, 1] {
            for ox in [-1.0, -0.5, 0, 0.5, 1] {
                guard
                    let again = confirm(
                        grey,
                        radius: radius,
                        x: eye.x + ox * reach,
                        y: eye.y + oy * reach,
                        span: Int(eye.span)
                    ), abs(again.x - eye.x) < eye.span / 6, abs(again.y - eye.y) < eye.span / 6
                else { continue }
                sum.x += again.x
                sum.y += again.y
                for k in 0..<4 { sum.spans[k] += again.spans[k] }
                sum.hits += 1
            }
        }
        guard sum.hits >= 3 else { return eye }
        let n = Double(sum.hits)
        return Bullseye(x: sum.x / n, y: sum.y / n, spans: sum.spans.map { $0 / n }, hits: eye.hits)
    }

    /// Adds a row's bullseye to the one it repeats (a running mean), or as a new one.
    private static func merge(_ eye: Bullseye, into found: inout [Bullseye]) {
        guard
            let j = found.firstIndex(where: {
                abs($0.x - eye.x) < $0.span / 6 && abs($0.y - eye.y) < $0.span / 6
            })
        else {
            found.append(eye)
            return
        }
        let n = Double(found[j].hits)
        found[j].x = (found[j].x * n + eye.x) / (n + 1)
        found[j].y = (found[j].y * n + eye.y) / (n + 1)
        for k in 0..<4 { found[j].spans[k] = (found[j].spans[k] * n + eye.spans[k]) / (n + 1) }
        found[j].hits += 1
    }

    /// When runs `i ..< i + 11` (dark first) look like a line through a bullseye, the
    /// centre's offset from the start of run `i`.
    private static func pattern(_ runs: [Int], at i: Int) -> Double? {
        var sum = 0
        for k in 0..<11 where k != 5 { sum += runs[i + k] }
        let mean = Double(sum) / 10
        guard mean >= 1.2 else { return nil }
        for k in 0..<11 where k != 5 {
            let r = Double(runs[i + k])
            if r < mean * 0.45 || r > mean * 1.75 { return nil }
        }
        let centre = Double(runs[i + 5])
        guard centre >= mean * 0.7, centre <= mean * 2.8 else { return nil }
        var left = 0
        var right = 0
        for k in 0..<5 {
            left += runs[i + k]
            right += runs[i + 6 + k]
        }
        guard Double(abs(left - right)) <= 0.3 * Double(max(left, right)) else { return nil }
        return Double(left) + centre / 2
    }

    /// The runs along the line through (x, y) in direction (dx, dy) (unit steps): the light
    /// centre run and five runs each way. Returns the centre (in steps from (x, y), along
    /// the line) and the span, in steps, when they match a bullseye.
    private static func crossing(
        _ grey: ImageBuffer,
        radius: Int,
        x: Double,
        y: Double,
        dx: Int,
        dy: Int,
        within: Int
    ) -> (centre: Double, span: Double)? {
        let sx = Int(x.rounded())
        let sy = Int(y.rounded())
        guard sx >= 0, sy >= 0, sx < grey.width, sy < grey.height else { return nil }
        // The line's extent inside the image, in steps either side of (sx, sy).
        func reach(_ sign: Int) -> Int {
            var t = 0
            while t < within {
                let nx = sx + sign * dx * (t + 1)
                let ny = sy + sign * dy * (t + 1)
                if nx < 0 || ny < 0 || nx >= grey.width || ny >= grey.height { return t }
                t += 1
            }
            return t
        }
        let back = reach(-1)
        let ahead = reach(1)
        var values = [UInt8](repeating: 0, count: back + ahead + 1)
        grey.pixels.withUnsafeBufferPointer { px in
            for t in -back...ahead {
                values[t + back] = px[(sy + dy * t) * grey.stride + sx + dx * t]
            }
        }
        var flags: [UInt8] = []
        darkAlong(values, radius: radius, into: &flags)
        let origin = back
        guard flags[origin] == 0 else { return nil }
        // Walk each way: the centre run's extent, then five runs.
        func walk(_ sign: Int) -> (centre: Int, runs: [Int])? {
            var i = origin
            while i >= 0, i < flags.count, flags[i] == 0 { i += sign }
            let centre = abs(i - origin)
            var runs: [Int] = []
            while runs.count < 5 {
                guard i >= 0, i < flags.count else { return nil }
                let colour = flags[i]
                var length = 0
                while i >= 0, i < flags.count, flags[i] == colour {
                    length += 1
                    i += sign
                }
                guard i >= 0, i < flags.count else { return nil }
                runs.append(length)
            }
            return (centre, runs)
        }
        guard let forward = walk(1), let backward = walk(-1) else { return nil }
        let all = backward.runs.reversed() + [forward.centre + backward.centre - 1] + forward.runs
        guard pattern(all, at: 0) != nil else { return nil }
        return (Double(forward.centre - backward.centre) / 2, Double(all.reduce(0, +)))
    }

    /// Checks a row's match vertically and along both diagonals; returns the bullseye with
    /// its centre refined.
    /// `span` is the row's: each line is thresholded only as far as a bullseye three times
    /// as wide, plus the window, would reach.
    private static func confirm(
        _ grey: ImageBuffer,
        radius: Int,
        x: Double,
        y: Double,
        span: Int
    ) -> Bullseye? {
        let within = 3 * span / 2 + radius
        func across(_ x: Double, _ y: Double, _ dx: Int, _ dy: Int) -> (
            centre: Double, span: Double
        )? {
            crossing(grey, radius: radius, x: x, y: y, dx: dx, dy: dy, within: within)
        }
        guard let vertical = across(x, y, 0, 1) else { return nil }
        let cy = y + vertical.centre
        guard let horizontal = across(x, cy, 1, 0) else { return nil }
        let cx = x + horizontal.centre
        guard let diagonal = across(cx, cy, 1, 1), let anti = across(cx, cy, 1, -1) else {
            return nil
        }
        let spans = [
            horizontal.span, diagonal.span * 2.0.squareRoot(), vertical.span,
            anti.span * 2.0.squareRoot(),
        ]
        // A circle seen at an angle: no diameter more than three times another.
        guard let low = spans.min(), let high = spans.max(), high <= low * 3 else { return nil }
        return Bullseye(x: cx, y: cy, spans: spans, hits: 1)
    }
}
