import Foundation
package import ScannerImages

/// Preprocessing for recognition: text-height estimate (for upscaling), Otsu threshold and
/// projection-profile deskew, on packed grey images.
package enum TextPreprocess {
    /// Otsu's threshold of a grey image's histogram.
    static func otsuThreshold(_ g: ImageBuffer) -> UInt8 {
        let histogram = GreyOps.histogram(g)
        let total = g.width * g.height
        var sumAll = 0.0
        for i in 0..<256 { sumAll += Double(i * histogram[i]) }
        var sumB = 0.0
        var weightB = 0
        var best = 0.0
        var threshold = 127
        for t in 0..<256 {
            weightB += histogram[t]
            if weightB == 0 { continue }
            let weightF = total - weightB
            if weightF == 0 { break }
            sumB += Double(t * histogram[t])
            let meanB = sumB / Double(weightB)
            let meanF = (sumAll - sumB) / Double(weightF)
            let between = Double(weightB) * Double(weightF) * (meanB - meanF) * (meanB - meanF)
            if between > best {
                best = between
                threshold = t
            }
        }
        return UInt8(threshold)
    }

    /// Whether each pixel is ink (darker than the Otsu threshold of a lightly blurred copy,
    /// so that noise does not count), and which of dark/light is the minority (the text).
    static func inkMask(_ g: ImageBuffer) -> [Bool] {
        let smooth = GreyOps.boxBlurred(g, radius: 1)
        let t = otsuThreshold(smooth)
        var dark = 0
        var mask = [Bool](repeating: false, count: g.width * g.height)
        for i in 0..<mask.count where smooth.pixels[i] <= t {
            mask[i] = true
            dark += 1
        }
        // Light text on a dark background: the text is the minority.
        if dark > mask.count / 2 { for i in 0..<mask.count { mask[i].toggle() } }
        return mask
    }

    /// The median height of text lines, in pixels, from the horizontal ink profile; nil when
    /// no line is found.
    static func medianLineHeight(mask: [Bool], width: Int, height: Int) -> Int? {
        guard width > 0, height > 0 else { return nil }
        let minInk = max(2, width / 200)
        var runs: [Int] = []
        var run = 0
        for y in 0..<height {
            var count = 0
            let row = y * width
            for x in 0..<width where mask[row + x] { count += 1 }
            if count >= minInk {
                run += 1
            } else {
                if run >= 3 { runs.append(run) }
                run = 0
            }
        }
        if run >= 3 { runs.append(run) }
        guard !runs.isEmpty else { return nil }
        return runs.sorted()[runs.count / 2]
    }

    /// The scale that brings short text lines to about 48 px (x-height about 20–25 px),
    /// between 1 and 4, also bounded so the result stays below 40 megapixels.
    static func upscaleFactor(lineHeight: Int?, width: Int, height: Int) -> Double {
        guard let lineHeight, lineHeight < 32 else { return 1 }
        var factor = min(4, 48 / Double(max(lineHeight, 6)))
        let limit = (40_000_000 / Double(max(1, width * height))).squareRoot()
        factor = min(factor, limit)
        return factor < 1.2 ? 1 : factor
    }

    /// The small rotation (degrees, within ±5) that makes text lines horizontal: the angle
    /// whose horizontal ink profile has the most variance, on a subsample of ink pixels.
    static func skewAngle(mask: [Bool], width: Int, height: Int) -> Double {
        var points: [(Double, Double)] = []
        let step = max(1, Int((Double(width * height) / 400_000).squareRoot()))
        for y in Swift.stride(from: 0, to: height, by: step) {
            for x in Swift.stride(from: 0, to: width, by: step) where mask[y * width + x] {
                points.append((Double(x), Double(y)))
            }
        }
        guard points.count > 50 else { return 0 }
        func score(_ degrees: Double) -> Double {
            let r = degrees * .pi / 180
            let s = sin(r)
            let c = cos(r)
            let offset = Double(width) * abs(s) + 1
            var bins = [Double](repeating: 0, count: Int(Double(height) + 2 * offset) / step + 2)
            for (x, y) in points {
                let yy = -s * x + c * y + offset
                bins[max(0, min(bins.count - 1, Int(yy) / step))] += 1
            }
            return bins.reduce(0) { $0 + $1 * $1 }
        }
        var best = 0.0
        var bestScore = score(0)
        for tenth in Swift.stride(from: -50, through: 50, by: 5) where tenth != 0 {
            let s = score(Double(tenth) / 10)
            if s > bestScore * 1.02 {
                bestScore = s
                best = Double(tenth) / 10
            }
        }
        // Refine around the best coarse angle.
        let coarse = best
        for tenth in Swift.stride(from: -4, through: 4, by: 1) where tenth != 0 {
            let a = coarse + Double(tenth) / 10
            let s = score(a)
            if s > bestScore {
                bestScore = s
                best = a
            }
        }
        return best
    }
}

extension TextPreprocess {
    /// Rotated by `degrees` around the centre with bilinear interpolation (smooth glyph edges
    /// matter to the recogniser), on a white canvas; same geometry as ``GreyOps/rotated``.
    package static func rotatedSmooth(_ g: ImageBuffer, degrees: Double) -> (
        ImageBuffer, PointTransform
    ) {
        let rotation = GreyOps.Rotation(g, degrees: degrees)
        let (w, h, cosR, sinR) = (rotation.width, rotation.height, rotation.cosR, rotation.sinR)
        let (cx, cy, ox, oy) = (rotation.cx, rotation.cy, rotation.ox, rotation.oy)
        var out = [UInt8](repeating: 255, count: w * h)
        g.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { o in
                func pixel(_ x: Int, _ y: Int) -> Double {
                    guard x >= 0, x < g.width, y >= 0, y < g.height else { return 255 }
                    return Double(src[y * g.stride + x])
                }
                for y in 0..<h {
                    let dy = Double(y) + 0.5 - oy
                    for x in 0..<w {
                        let dx = Double(x) + 0.5 - ox
                        let sx = cosR * dx + sinR * dy + cx - 0.5
                        let sy = -sinR * dx + cosR * dy + cy - 0.5
                        let x0 = Int(sx.rounded(.down))
                        let y0 = Int(sy.rounded(.down))
                        if x0 < -1 || y0 < -1 || x0 >= g.width || y0 >= g.height { continue }
                        let fx = sx - Double(x0)
                        let fy = sy - Double(y0)
                        let top = pixel(x0, y0) * (1 - fx) + pixel(x0 + 1, y0) * fx
                        let bottom = pixel(x0, y0 + 1) * (1 - fx) + pixel(x0 + 1, y0 + 1) * fx
                        o[y * w + x] = UInt8(
                            max(0, min(255, (top * (1 - fy) + bottom * fy).rounded()))
                        )
                    }
                }
            }
        }
        return (GreyOps.packed(width: w, height: h, out), rotation.back)
    }
}

extension TextPreprocess {
    /// `g` scaled up by `factor` with bicubic (Keys, a = −0.5) interpolation, centred as
    /// ``GreyOps/scaled(_:by:)`` is, so points map back the same way. Small glyphs keep
    /// their stroke contrast: bilinear interpolation blurs a one- or two-pixel stroke into
    /// a ramp that the recogniser reads as a lighter, wider stroke.
    package static func scaledBicubic(_ g: ImageBuffer, by factor: Double) -> (
        ImageBuffer, PointTransform
    ) {
        let w = max(1, Int(Double(g.width) * factor))
        let h = max(1, Int(Double(g.height) * factor))
        // Per output coordinate: the first of four source taps and their weights (×1024).
        func taps(_ n: Int, _ size: Int) -> (index: [Int32], weight: [Int32]) {
            var index = [Int32](repeating: 0, count: n * 4)
            var weight = [Int32](repeating: 0, count: n * 4)
            for o in 0..<n {
                let f = (Double(o) + 0.5) / factor - 0.5
                let base = Int(f.rounded(.down))
                let t = f - Double(base)
                let ws = [
                    cubic(1 + t), cubic(t), cubic(1 - t), cubic(2 - t),
                ]
                var total: Int32 = 0
                for k in 0..<4 {
                    index[o * 4 + k] = Int32(min(size - 1, max(0, base - 1 + k)))
                    let v = Int32((ws[k] * 1024).rounded())
                    weight[o * 4 + k] = v
                    total += v
                }
                weight[o * 4 + 1] += 1024 - total
            }
            return (index, weight)
        }
        let (xi, xw) = taps(w, g.width)
        let (yi, yw) = taps(h, g.height)
        // Rows first (into 32-bit, ×1024), then columns.
        var rows = [Int32](repeating: 0, count: w * g.height)
        g.pixels.withUnsafeBufferPointer { src in
            rows.withUnsafeMutableBufferPointer { r in
                for y in 0..<g.height {
                    let s = y * g.stride
                    let o = y * w
                    for x in 0..<w {
                        var acc: Int32 = 0
                        for k in 0..<4 {
                            acc &+= Int32(src[s + Int(xi[x * 4 + k])]) &* xw[x * 4 + k]
                        }
                        r[o + x] = acc
                    }
                }
            }
        }
        var out = [UInt8](repeating: 0, count: w * h)
        rows.withUnsafeBufferPointer { r in
            out.withUnsafeMutableBufferPointer { o in
                for y in 0..<h {
                    let row = y * w
                    let r0 = Int(yi[y * 4]) * w
                    let r1 = Int(yi[y * 4 + 1]) * w
                    let r2 = Int(yi[y * 4 + 2]) * w
                    let r3 = Int(yi[y * 4 + 3]) * w
                    let (w0, w1, w2, w3) = (
                        Int64(yw[y * 4]), Int64(yw[y * 4 + 1]), Int64(yw[y * 4 + 2]),
                        Int64(yw[y * 4 + 3])
                    )
                    for x in 0..<w {
                        let v =
                            (Int64(r[r0 + x]) * w0 + Int64(r[r1 + x]) * w1 + Int64(r[r2 + x]) * w2
                                + Int64(r[r3 + x]) * w3 + (1 << 19)) >> 20
                        o[row + x] = UInt8(clamping: v)
                    }
                }
            }
        }
        return (
            GreyOps.packed(width: w, height: h, out),
            .scale(Double(g.width) / Double(w))
        )
    }

    /// Keys' cubic convolution kernel with a = −0.5 (Catmull-Rom).
    private static func cubic(_ x: Double) -> Double {
        let x = abs(x)
        if x <= 1 { return 1.5 * x * x * x - 2.5 * x * x + 1 }
        if x < 2 { return -0.5 * x * x * x + 2.5 * x * x - 4 * x + 2 }
        return 0
    }
}
