import Foundation

/// Maps points found in a derived image (cropped, scaled, rotated) back to the original.
struct PointTransform: Sendable {
    // x' = a*x + b*y + tx ; y' = c*x + d*y + ty
    var a = 1.0, b = 0.0, c = 0.0, d = 1.0, tx = 0.0, ty = 0.0

    static let identity = PointTransform()

    func apply(_ p: ImagePoint) -> ImagePoint {
        let x = Double(p.x)
        let y = Double(p.y)
        return ImagePoint(x: Int((a * x + b * y + tx).rounded()), y: Int((c * x + d * y + ty).rounded()))
    }

    /// First `inner`, then `self`.
    func after(_ inner: PointTransform) -> PointTransform {
        PointTransform(
            a: a * inner.a + b * inner.c, b: a * inner.b + b * inner.d,
            c: c * inner.a + d * inner.c, d: c * inner.b + d * inner.d,
            tx: a * inner.tx + b * inner.ty + tx, ty: c * inner.tx + d * inner.ty + ty)
    }

    static func translation(_ x: Double, _ y: Double) -> PointTransform { PointTransform(tx: x, ty: y) }
    static func scale(_ s: Double) -> PointTransform { PointTransform(a: s, d: s) }
}

/// Grey-image derivations for the fallback passes. Each returns a new packed grey image and
/// the transform from its coordinates back to its source's.
enum GreyOps {
    /// Nearest-neighbour for upscaling (keeps module edges crisp), box average for downscaling.
    static func scaled(_ g: ImageBuffer, by factor: Double) -> (ImageBuffer, PointTransform) {
        let w = max(1, Int(Double(g.width) * factor))
        let h = max(1, Int(Double(g.height) * factor))
        var out = [UInt8](repeating: 0, count: w * h)
        g.pixels.withUnsafeBufferPointer { src in
            if factor >= 1 {
                for y in 0..<h {
                    let sy = min(g.height - 1, Int(Double(y) / factor))
                    for x in 0..<w {
                        let sx = min(g.width - 1, Int(Double(x) / factor))
                        out[y * w + x] = src[sy * g.stride + sx]
                    }
                }
            } else {
                let step = 1 / factor
                for y in 0..<h {
                    let y0 = Int(Double(y) * step)
                    let y1 = max(y0 + 1, min(g.height, Int(Double(y + 1) * step)))
                    for x in 0..<w {
                        let x0 = Int(Double(x) * step)
                        let x1 = max(x0 + 1, min(g.width, Int(Double(x + 1) * step)))
                        var sum = 0
                        for yy in y0..<y1 { for xx in x0..<x1 { sum += Int(src[yy * g.stride + xx]) } }
                        out[y * w + x] = UInt8(sum / ((y1 - y0) * (x1 - x0)))
                    }
                }
            }
        }
        let image = ImageBuffer(uncheckedWidth: w, height: h, format: .grey, stride: w, pixels: out)
        return (image, .scale(Double(g.width) / Double(w)))
    }

    /// Light-on-dark to dark-on-light.
    static func inverted(_ g: ImageBuffer) -> ImageBuffer {
        map(g) { 255 &- $0 }
    }

    /// Stretches the 1st..99th percentile of the histogram over the full range.
    static func contrastStretched(_ g: ImageBuffer) -> ImageBuffer? {
        var histogram = [Int](repeating: 0, count: 256)
        for y in 0..<g.height { for x in 0..<g.width { histogram[Int(g.pixels[y * g.stride + x])] += 1 } }
        let total = g.width * g.height
        var low = 0
        var acc = 0
        while low < 255, acc + histogram[low] < total / 100 { acc += histogram[low]; low += 1 }
        var high = 255
        acc = 0
        while high > 0, acc + histogram[high] < total / 100 { acc += histogram[high]; high -= 1 }
        guard high - low > 8, high - low < 200 else { return nil }
        let span = Double(high - low)
        var table = [UInt8](repeating: 0, count: 256)
        for v in 0..<256 { table[v] = UInt8(max(0, min(255, (Double(v - low) / span * 255).rounded()))) }
        return map(g) { table[Int($0)] }
    }

    /// A 3x3 box blur: joins broken modules and damps sensor noise and halftone dots.
    static func blurred(_ g: ImageBuffer) -> ImageBuffer {
        let w = g.width
        let h = g.height
        guard w >= 3, h >= 3 else { return g }
        var out = [UInt8](repeating: 0, count: w * h)
        // Horizontal sums of three, then vertical sums of three of those (edges clamp).
        var rows = [UInt16](repeating: 0, count: w * h)
        g.pixels.withUnsafeBufferPointer { src in
            rows.withUnsafeMutableBufferPointer { r in
                for y in 0..<h {
                    let s = y * g.stride
                    let o = y * w
                    for x in 0..<w {
                        let l = x > 0 ? x - 1 : x
                        let rr = x < w - 1 ? x + 1 : x
                        r[o + x] = UInt16(src[s + l]) + UInt16(src[s + x]) + UInt16(src[s + rr])
                    }
                }
            }
        }
        rows.withUnsafeBufferPointer { r in
            out.withUnsafeMutableBufferPointer { o in
                for y in 0..<h {
                    let up = (y > 0 ? y - 1 : y) * w
                    let mid = y * w
                    let down = (y < h - 1 ? y + 1 : y) * w
                    for x in 0..<w {
                        o[mid + x] = UInt8((UInt32(r[up + x]) + UInt32(r[mid + x]) + UInt32(r[down + x])) / 9)
                    }
                }
            }
        }
        return ImageBuffer(uncheckedWidth: w, height: h, format: .grey, stride: w, pixels: out)
    }

    /// Rotated by `degrees` around the centre on a white canvas large enough to hold it.
    static func rotated(_ g: ImageBuffer, degrees: Double) -> (ImageBuffer, PointTransform) {
        let r = degrees * .pi / 180
        let cosR = cos(r)
        let sinR = sin(r)
        let w = Int((abs(Double(g.width) * cosR) + abs(Double(g.height) * sinR)).rounded(.up))
        let h = Int((abs(Double(g.width) * sinR) + abs(Double(g.height) * cosR)).rounded(.up))
        let cx = Double(g.width) / 2
        let cy = Double(g.height) / 2
        let ox = Double(w) / 2
        let oy = Double(h) / 2
        var out = [UInt8](repeating: 255, count: w * h)
        for y in 0..<h {
            let dy = Double(y) - oy
            for x in 0..<w {
                let dx = Double(x) - ox
                // Inverse rotation: where this output pixel comes from.
                let sx = Int((cosR * dx + sinR * dy + cx).rounded(.down))
                let sy = Int((-sinR * dx + cosR * dy + cy).rounded(.down))
                if sx >= 0, sx < g.width, sy >= 0, sy < g.height { out[y * w + x] = g.pixels[sy * g.stride + sx] }
            }
        }
        let image = ImageBuffer(uncheckedWidth: w, height: h, format: .grey, stride: w, pixels: out)
        let back = PointTransform(
            a: cosR, b: sinR, c: -sinR, d: cosR,
            tx: -cosR * ox - sinR * oy + cx, ty: sinR * ox - cosR * oy + cy)
        return (image, back)
    }

    private static func map(_ g: ImageBuffer, _ f: (UInt8) -> UInt8) -> ImageBuffer {
        var out = [UInt8](repeating: 0, count: g.width * g.height)
        for y in 0..<g.height {
            for x in 0..<g.width { out[y * g.width + x] = f(g.pixels[y * g.stride + x]) }
        }
        return ImageBuffer(uncheckedWidth: g.width, height: g.height, format: .grey, stride: g.width, pixels: out)
    }
}
