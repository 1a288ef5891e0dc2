import Foundation

extension GreyOps {
    /// The direction of a cylinder's axis in an image: along the columns (a standing bottle
    /// or can) or along the rows (one lying down).
    package enum CylinderAxis: Sendable, CaseIterable {
        case vertical
        case horizontal
    }

    /// A region flattened by ``cylinderFlattened(_:axis:centre:middle:radius:distance:scale:)``
    /// and the way back from its pixels to the region's.
    package struct Flattened: Sendable {
        /// The flattened image.
        package var image: ImageBuffer
        /// From the flattened image's coordinates to the region's.
        package var back: @Sendable (Double, Double) -> (x: Double, y: Double)
    }

    /// `g` taken as a label wrapped round a cylinder of `radius` pixels (at the label's
    /// middle), its axis along `axis` at `centre` pixels across the image (from the left
    /// edge for a vertical axis, the top for a horizontal one) and `middle` pixels along it,
    /// seen from `distance` radii from the axis (`.infinity`: from afar, square on): the
    /// label unrolled, scaled by `scale`, in one Catmull-Rom resampling. What lies beyond
    /// the cylinder's visible side is left out.
    ///
    /// A point at arc length `s` from the line facing the camera, at angle `t = s / r`, lies
    /// `r sin(t) k(t)` from the axis in the image, and a height `h` along the axis from the
    /// middle at `h k(t)`, where `k(t) = (d - 1) / (d - cos(t))` (1 from afar): modules
    /// near the sides are squeezed across the axis (to `cos(t)` of their width from afar),
    /// and seen from nearby the rows bow towards the middle, which a grid reader takes for a
    /// grid that is neither square nor straight. Unrolled, every module is as in the middle
    /// again. The radius and distance are not known from the pixels; callers try a few.
    package static func cylinderFlattened(
        _ g: ImageBuffer,
        axis: CylinderAxis,
        centre: Double,
        middle: Double,
        radius: Double,
        distance: Double = .infinity,
        scale: Double
    ) -> Flattened {
        let s = max(scale, 0.25)
        let across = Double(axis == .vertical ? g.width : g.height)
        let along = Double(axis == .vertical ? g.height : g.width)
        let r = max(radius, 1)
        let d = max(distance, 1.2)
        // k(t), and the image offset across the axis of the point at angle t.
        let k: @Sendable (Double) -> Double = { t in d.isFinite ? (d - 1) / (d - cos(t)) : 1 }
        let offset: @Sendable (Double) -> Double = { t in r * sin(t) * k(t) }
        // The visible side: where the offset stops growing (cos t = 1/d; from afar, 90°).
        let limb = d.isFinite ? acos(1 / d) : .pi / 2
        // The angle whose offset is `x` (offset grows with t up to the limb), by bisection.
        func angle(_ x: Double) -> Double {
            guard x < offset(limb) else { return limb }
            var (low, high) = (0.0, limb)
            for _ in 0..<40 {
                let mid = (low + high) / 2
                if offset(mid) < x { low = mid } else { high = mid }
            }
            return (low + high) / 2
        }
        // The unrolled arcs either side of the facing line, as far as the image reaches.
        let before = r * angle(max(0, centre))
        let after = r * angle(max(0, across - centre))
        let outAcross = max(1, Int(((before + after) * s).rounded()))
        let outAlong = max(1, Int((along * s).rounded()))
        // Each output line across the axis: its angle's source offset and row scale.
        var acrossSource = [Double](repeating: 0, count: outAcross)
        var alongScale = [Double](repeating: 1, count: outAcross)
        for i in 0..<outAcross {
            let t = ((Double(i) + 0.5) / s - before) / r
            acrossSource[i] = centre + offset(t)
            alongScale[i] = k(t)
        }
        let vertical = axis == .vertical
        let (w, h) = vertical ? (outAcross, outAlong) : (outAlong, outAcross)
        let out = sample(g, width: w, height: h) { x, y in
            // Source positions with pixel centres at whole numbers.
            let (i, j) = vertical ? (x, y) : (y, x)
            let a = acrossSource[i]
            let b = middle + ((Double(j) + 0.5) / s - middle) * alongScale[i]
            return vertical ? (a - 0.5, b - 0.5) : (b - 0.5, a - 0.5)
        }
        let image = packed(width: w, height: h, out)
        let back: @Sendable (Double, Double) -> (x: Double, y: Double) = { x, y in
            let (a, b) = vertical ? (x, y) : (y, x)
            let t = (a / s - before) / r
            let acrossBack = centre + offset(t)
            let alongBack = middle + (b / s - middle) * k(t)
            return vertical ? (acrossBack, alongBack) : (alongBack, acrossBack)
        }
        return Flattened(image: image, back: back)
    }

    /// A `width` × `height` image whose pixel (x, y) is `g` at `source(x, y)` (pixel centres
    /// at whole numbers), with Catmull-Rom weights; white outside `g`.
    private static func sample(
        _ g: ImageBuffer,
        width w: Int,
        height h: Int,
        _ source: (Int, Int) -> (Double, Double)
    ) -> [UInt8] {
        var out = [UInt8](repeating: 255, count: w * h)
        let table = catmullRomTable
        let (sw, sh, stride) = (g.width, g.height, g.stride)
        g.pixels.withUnsafeBufferPointer { src in
            table.withUnsafeBufferPointer { wt in
                out.withUnsafeMutableBufferPointer { o in
                    for y in 0..<h {
                        for x in 0..<w {
                            let (sx, sy) = source(x, y)
                            let fx = sx.rounded(.down)
                            let fy = sy.rounded(.down)
                            guard fx > -2, fy > -2, fx < Double(sw + 1), fy < Double(sh + 1)
                            else { continue }
                            let left = Int(fx) - 1
                            let top = Int(fy) - 1
                            let wx = min(63, Int((sx - fx) * 64)) << 2
                            let wy = min(63, Int((sy - fy) * 64)) << 2
                            var sum = 0
                            for j in 0..<4 {
                                let yy = top + j
                                var row = 0
                                for i in 0..<4 {
                                    let xx = left + i
                                    let p =
                                        xx >= 0 && xx < sw && yy >= 0 && yy < sh
                                        ? Int(src[yy * stride + xx]) : 255
                                    row &+= wt[wx + i] &* p
                                }
                                sum &+= wt[wy + j] &* row
                            }
                            o[y * w + x] = UInt8(max(0, min(255, (sum &+ 32768) >> 16)))
                        }
                    }
                }
            }
        }
        return out
    }
}
