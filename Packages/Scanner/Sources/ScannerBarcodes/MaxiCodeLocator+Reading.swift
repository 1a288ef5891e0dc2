import Foundation
import ScannerImages

/// Reading a symbol around a found bullseye (``MaxiCodeLocator``'s second half).
extension MaxiCodeLocator {
    /// A projective map from symbol coordinates (hexagon pitches from the bullseye's
    /// centre, x along the rows, y down) to image pixels, which keeps the centre in place:
    /// ((a x + b y, c x + d y) / (1 + g x + h y)) + (tx, ty).
    struct Placement {
        var a: Double, b: Double, c: Double, d: Double, tx: Double, ty: Double
        var g = 0.0, h = 0.0

        @inline(__always)
        func apply(_ x: Double, _ y: Double) -> (Double, Double) {
            let w = 1 / (1 + g * x + h * y)
            return ((a * x + b * y) * w + tx, (c * x + d * y) * w + ty)
        }
    }

    /// A module's centre in symbol coordinates.
    @inline(__always)
    static func centre(column: Int, row: Int) -> (Double, Double) {
        (Double(column) + (row & 1 == 1 ? 0.5 : 0) - 14, Double(row - 16) * 0.866_025_4)
    }

    /// The map from the unit circle to the bullseye's ellipse in the image (the symmetric
    /// root of the ellipse's form), from its four measured diameters; nil when they do not
    /// describe an ellipse.
    static func ellipse(_ eye: Bullseye) -> (Double, Double, Double, Double)? {
        let q = eye.spans.map { 4 / ($0 * $0) }  // 1 / radius²
        let p = q[0]
        let s = q[2]
        let r = (q[1] - q[3]) / 2
        let det = p * s - r * r
        guard p > 0, s > 0, det > 0 else { return nil }
        // M = V diag(l1, l2) Vᵀ; M^(-1/2) = V diag(1/√l1, 1/√l2) Vᵀ.
        let mean = (p + s) / 2
        let spread = (((p - s) / 2) * ((p - s) / 2) + r * r).squareRoot()
        let l1 = mean + spread
        let l2 = mean - spread
        guard l2 > 0 else { return nil }
        var (vx, vy) = abs(r) > 1e-12 ? (r, l1 - p) : (p >= s ? (1.0, 0.0) : (0.0, 1.0))
        let n = (vx * vx + vy * vy).squareRoot()
        vx /= n
        vy /= n
        let e1 = 1 / l1.squareRoot()
        let e2 = 1 / l2.squareRoot()
        // V = [[vx, -vy], [vy, vx]]
        return (
            vx * vx * e1 + vy * vy * e2, vx * vy * (e1 - e2),
            vx * vy * (e1 - e2), vy * vy * e1 + vx * vx * e2
        )
    }

    /// The placement for a turn of `degrees` and a pitch `scale` times the measured one.
    static func placement(
        _ eye: Bullseye,
        _ root: (Double, Double, Double, Double),
        degrees: Double,
        scale: Double
    ) -> Placement {
        let t = degrees * .pi / 180
        let (cs, sn) = (cos(t), sin(t))
        let k = scale * 2 / bullseyeDiameter
        let (m11, m12, m21, m22) = root
        return Placement(
            a: k * (m11 * cs + m12 * sn),
            b: k * (-m11 * sn + m12 * cs),
            c: k * (m21 * cs + m22 * sn),
            d: k * (-m21 * sn + m22 * cs),
            tx: eye.x,
            ty: eye.y
        )
    }

    /// How many of five samples around symbol point (x, y) are dark: the point, and
    /// `spread` of a pitch either side of it along the rows and across them.
    @inline(__always)
    static func darkSamples(
        _ map: DarkMap,
        _ place: Placement,
        _ x: Double,
        _ y: Double,
        spread: Double
    ) -> Int {
        // Unrolled, with a floor that needs no call into libm (`rounded(.down)` is one on a
        // baseline x86-64 build): this is the locator's inner loop (24% of a MaxiCode photo's
        // time, in ``agreement``).
        @inline(__always)
        func dark(_ sx: Double, _ sy: Double) -> Int {
            let (ix, iy) = place.apply(sx, sy)
            return map.isDark(floorInt(ix), floorInt(iy)) ? 1 : 0
        }
        let across = spread * 0.866_025_4
        return dark(x, y) + dark(x + spread, y) + dark(x - spread, y) + dark(x, y + across)
            + dark(x, y - across)
    }

    /// `Int(v.rounded(.down))`, for values an `Int` holds.
    @inline(__always)
    static func floorInt(_ v: Double) -> Int {
        let t = Int(v)
        return Double(t) > v ? t - 1 : t
    }

    /// Whether the module centred at symbol point (x, y) is dark: a majority of five samples
    /// a quarter pitch apart.
    @inline(__always)
    static func sample(_ map: DarkMap, _ place: Placement, _ x: Double, _ y: Double) -> Bool {
        darkSamples(map, place, x, y, spread: 0.25) >= 3
    }

    /// How many of the fixed modules read as they must (at most 20).
    static func fixedScore(_ map: DarkMap, _ place: Placement) -> Int {
        var score = 0
        for (column, row) in fixedDark {
            let (x, y) = centre(column: column, row: row)
            if sample(map, place, x, y) { score += 1 }
        }
        for (column, row) in fixedLight {
            let (x, y) = centre(column: column, row: row)
            if !sample(map, place, x, y) { score += 1 }
        }
        return score
    }

    /// The turns worth trying: the middles of the runs of whole degrees whose fixed modules
    /// read at most two wrong and at most one worse than the best, best runs first (a run's
    /// middle is nearer the true turn than its first degree), at most three.
    static func turns(_ map: DarkMap, _ eye: Bullseye, _ root: (Double, Double, Double, Double))
        -> [Double]
    {
        let scores = (0..<360).map { degrees in
            fixedScore(map, placement(eye, root, degrees: Double(degrees), scale: 1))
        }
        guard let best = scores.max(), best >= fixedDark.count + fixedLight.count - 2 else {
            return []
        }
        let good = scores.map { $0 >= best - 1 }
        // Runs of good degrees, around the circle: start where a good degree follows a bad.
        guard let start = (0..<360).first(where: { !good[$0] }) else { return [] }
        var runs: [(middle: Double, top: Int, width: Int)] = []
        var first: Int?
        for k in 1...360 {
            let degree = (start + k) % 360
            if good[degree] {
                if first == nil { first = start + k }
            } else if let from = first {
                let last = start + k - 1
                let top = (from...last).map { scores[$0 % 360] }.max() ?? 0
                let middle = Double(from + last) / 2
                runs.append((middle.truncatingRemainder(dividingBy: 360), top, last - from + 1))
                first = nil
            }
        }
        return runs.sorted { ($0.top, $0.width) > ($1.top, $1.width) }.prefix(3).map(\.middle)
    }

    static func angleDifference(_ a: Double, _ b: Double) -> Double {
        let d = (a - b).truncatingRemainder(dividingBy: 360)
        return d > 180 ? d - 360 : (d < -180 ? d + 360 : d)
    }

    /// The grid sampled at `place`, drawn upright and pure (8 pixels a module, a 16-pixel
    /// margin) the way ZXing-C++'s pure MaxiCode reader samples it: even rows' modules at
    /// 8c + 4, odd rows' at 8c + 8, rows at 8r + 4; two unsampled corner pixels fix the
    /// bounding box it measures.
    static func drawn(_ map: DarkMap, _ place: Placement) -> ImageBuffer {
        let margin = 16
        let width = columns * 8 + 2 * margin
        let height = rows * 8 + 2 * margin
        var pixels = [UInt8](repeating: 255, count: width * height)
        for row in 0..<rows {
            for column in 0..<columns {
                if row & 1 == 1, column == columns - 1 { continue }
                let (x, y) = centre(column: column, row: row)
                guard sample(map, place, x, y) else { continue }
                let left = margin + column * 8 + (row & 1 == 1 ? 4 : 0)
                let top = margin + row * 8
                for yy in top..<(top + 8) {
                    for xx in left..<(left + 8) { pixels[yy * width + xx] = 0 }
                }
            }
        }
        pixels[margin * width + margin] = 0
        pixels[(margin + rows * 8 - 1) * width + margin + columns * 8 - 1] = 0
        return GreyOps.packed(width: width, height: height, pixels)
    }

    /// The symbol's corners in the image (top left, top right, bottom right, bottom left).
    static func corners(_ place: Placement) -> [ImagePoint] {
        [(-14.5, -14.3), (15.5, -14.3), (15.5, 14.3), (-14.5, 14.3)].map { corner in
            let (x, y) = place.apply(corner.0, corner.1)
            return ImagePoint(x: Int(x.rounded()), y: Int(y.rounded()))
        }
    }

    /// How many modules' five samples agree: the grid lies on the hexagons' centres when
    /// most do, and on their edges where it drifts. Only modules within `radius` pitches of
    /// the centre count.
    static func agreement(
        _ map: DarkMap,
        _ place: Placement,
        within radius: Double = .infinity
    ) -> Int {
        var agreeing = 0
        let limit = radius * radius
        for row in 0..<rows {
            for column in 0..<columns {
                if row & 1 == 1, column == columns - 1 { continue }
                let (x, y) = centre(column: column, row: row)
                if x * x + y * y > limit { continue }
                let dark = darkSamples(map, place, x, y, spread: 0.3)
                if dark == 0 || dark == 5 { agreeing += 1 }
            }
        }
        return agreeing
    }

    /// Where the fit starts: a pitch (the rings' measure is off by a few per cent) and how
    /// much the orientation modules weigh as anchors. Without anchors a perspective fit can
    /// leave the basin they hold it in near the centre.
    static let fitStarts: [(pitch: Double, anchors: Int)] = [
        (1.0, 3), (0.97, 3), (1.04, 3), (1.0, 0), (1.04, 0),
    ]

    /// How far from the centre (in pitches) the fit's agreement reaches, stage by stage: the
    /// modules near the bullseye, where a coarse placement is nearly right, settle the turn,
    /// pitch and stretch first; the outer ones, which perspective moves most, then settle
    /// the perspective terms. Fitted on the whole grid at once, the outer modules' noise held
    /// a steep perspective (a label at 30-40° to the camera) in a wrong basin: on three
    /// seeds of `scripts/fixtures/maxicode-photos.py` (the test's and two others) the
    /// default effort read 35, 37 and 38 of 40 so, and 40 of each grown from 8 and then 12
    /// pitches (8, 10, "6, 10, 14" and "8, 12" all read 40; "8, 12" was the quickest).
    static let fitRadii: [Double] = [8, 12, .infinity]

    /// The placement at a coarse turn, refined by coordinate ascent on ``agreement`` plus
    /// `anchors` times ``fixedScore`` from a pitch `scale` times the measured one: turn,
    /// pitch, centre, the two perspective terms (a label photographed at an angle) and a
    /// stretch and a shear, halving the steps twice, at each of ``fitRadii`` in turn (the
    /// whole grid's from half the first steps).
    static func refined(
        _ map: DarkMap,
        _ eye: Bullseye,
        _ root: (Double, Double, Double, Double),
        turn: Double,
        scale: Double,
        anchors: Int
    ) -> Placement {
        let pitch = eye.span / bullseyeDiameter
        // turn, scale, x, y, g, h, and a stretch and a shear of the symbol (the rings'
        // ellipse is measured on a few pixels: its shape may be a little off)
        var p = [turn, scale, 0, 0, 0, 0, 0, 0]
        let firstSteps = [1.0, 0.02, 0.2 * pitch, 0.2 * pitch, 0.004, 0.004, 0.01, 0.01]
        func make(_ p: [Double]) -> Placement {
            var place = placement(eye, root, degrees: p[0], scale: p[1])
            let (a, b, c, d) = (place.a, place.b, place.c, place.d)
            place.a = a * (1 + p[6]) + b * p[7]
            place.b = a * p[7] + b * (1 - p[6])
            place.c = c * (1 + p[6]) + d * p[7]
            place.d = c * p[7] + d * (1 - p[6])
            place.tx += p[2]
            place.ty += p[3]
            place.g = p[4]
            place.h = p[5]
            return place
        }
        // Agreement, with the fixed modules as anchors: a grid moved by a whole module agrees
        // as well as the right one, but its orientation modules read wrong.
        for radius in fitRadii {
            func objective(_ place: Placement) -> Int {
                agreement(map, place, within: radius) + anchors * fixedScore(map, place)
            }
            var steps = radius.isFinite ? firstSteps : firstSteps.map { $0 / 2 }
            var best = objective(make(p))
            for _ in 0..<3 {
                var improved = true
                var rounds = 0
                while improved, rounds < 16 {
                    improved = false
                    rounds += 1
                    for k in 0..<p.count {
                        for sign in [1.0, -1.0] {
                            var q = p
                            q[k] += sign * steps[k]
                            // The bullseye gives the centre to a third of a pitch.
                            if k == 2 || k == 3, abs(q[k]) > 0.35 * pitch { continue }
                            let score = objective(make(q))
                            if score > best {
                                best = score
                                p = q
                                improved = true
                                break
                            }
                        }
                    }
                }
                steps = steps.map { $0 / 2 }
            }
        }
        return make(p)
    }

    /// Reads the MaxiCode symbols around the bullseyes inside `boxes` (the whole image when
    /// nil), in `grey`'s coordinates. `budget` caps ZXing attempts per bullseye.
    static func read(
        _ grey: ImageBuffer,
        within boxes: [PixelRect]? = nil,
        limit: Int = 3,
        budget: Int = 40
    ) -> [Barcode] {
        var boxes = boxes ?? [PixelRect(x: 0, y: 0, width: grey.width, height: grey.height)]
        // Large photos at half size: the rings stay several pixels wide.
        var image = grey
        var back = PointTransform.identity
        if max(grey.width, grey.height) > 2400 {
            (image, back) = GreyOps.scaled(grey, by: 0.5)
            boxes = boxes.map {
                PixelRect(x: $0.x / 2, y: $0.y / 2, width: $0.width / 2, height: $0.height / 2)
            }
        }
        var found: [Barcode] = []
        var pass = ZXingEngine.Pass()
        pass.isPure = true
        pass.tryHarder = false
        pass.tryRotate = false
        pass.tryInvert = false
        pass.tryDownscale = false
        pass.binarizer = .fixedThreshold
        for eye in bullseyes(in: image, within: boxes, limit: limit) {
            // The grid's samples come from a map of the symbol's surroundings only.
            let reach = Int(eye.span * 2.8)
            guard
                let region = PixelRect(
                    x: Int(eye.x) - reach,
                    y: Int(eye.y) - reach,
                    width: 2 * reach,
                    height: 2 * reach
                ).clipped(toWidth: image.width, height: image.height)
            else { continue }
            let map = DarkMap(image, region: region, radius: windowRadius(image))
            guard let root = ellipse(eye) else { continue }
            // Each turn's fits, each read as soon as it is made (most symbols read from the
            // first), then turns and pitches around each coarse one, nearest first: at most
            // `budget` readings in all.
            let turns = turns(map, eye, root)
            var attempts = 0
            func reads(_ place: Placement) -> Bool {
                attempts += 1
                let read =
                    ZXingEngine.read(
                        drawn(map, place),
                        symbologies: [.maxiCode],
                        pass: pass,
                        maximumSymbols: 1,
                        transform: .identity
                    ) ?? []
                guard var code = read.first else { return false }
                code.points = corners(place).map(back.apply)
                found.append(code)
                return true
            }
            search: do {
                for turn in turns {
                    for start in fitStarts {
                        if attempts >= budget { break search }
                        let place = refined(
                            map,
                            eye,
                            root,
                            turn: turn,
                            scale: start.pitch,
                            anchors: start.anchors
                        )
                        if reads(place) { break search }
                    }
                }
                for (dt, scale) in refinements {
                    for turn in turns {
                        if attempts >= budget { break search }
                        if reads(placement(eye, root, degrees: turn + dt, scale: scale)) {
                            break search
                        }
                    }
                }
            }
        }
        return found
    }

    /// Turn (degrees) and pitch refinements around a coarse turn, nearest first.
    static let refinements: [(Double, Double)] = {
        var all: [(Double, Double)] = []
        for dt in [0.0, -1, 1, -2, 2, -0.5, 0.5, -1.5, 1.5] {
            for scale in [1.0, 0.96, 1.04, 0.92, 1.08] { all.append((dt, scale)) }
        }
        return all.sorted {
            abs($0.0) / 2 + abs($0.1 - 1) * 12 < abs($1.0) / 2 + abs($1.1 - 1) * 12
        }
    }()
}
