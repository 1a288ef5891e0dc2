import Foundation

/// Maps points found in a derived image (cropped, scaled, rotated) back to the original.
package struct PointTransform: Sendable {
    // x' = a*x + b*y + tx ; y' = c*x + d*y + ty
    package var a = 1.0, b = 0.0, c = 0.0, d = 1.0, tx = 0.0, ty = 0.0

    package static let identity = PointTransform()

    package func apply(_ p: ImagePoint) -> ImagePoint {
        let x = Double(p.x)
        let y = Double(p.y)
        return ImagePoint(
            x: Int((a * x + b * y + tx).rounded()),
            y: Int((c * x + d * y + ty).rounded())
        )
    }

    /// The point (`x`, `y`) mapped, unrounded.
    package func apply(x: Double, y: Double) -> (x: Double, y: Double) {
        (a * x + b * y + tx, c * x + d * y + ty)
    }

    /// The transform that undoes this one (the identity when this one flattens the plane).
    package func inverted() -> PointTransform {
        let det = a * d - b * c
        guard abs(det) > 1e-12 else { return .identity }
        let (ia, ib, ic, id) = (d / det, -b / det, -c / det, a / det)
        return PointTransform(
            a: ia,
            b: ib,
            c: ic,
            d: id,
            tx: -(ia * tx + ib * ty),
            ty: -(ic * tx + id * ty)
        )
    }

    /// First `inner`, then `self`.
    package func after(_ inner: PointTransform) -> PointTransform {
        PointTransform(
            a: a * inner.a + b * inner.c,
            b: a * inner.b + b * inner.d,
            c: c * inner.a + d * inner.c,
            d: c * inner.b + d * inner.d,
            tx: a * inner.tx + b * inner.ty + tx,
            ty: c * inner.tx + d * inner.ty + ty
        )
    }

    package static func translation(_ x: Double, _ y: Double) -> PointTransform {
        PointTransform(tx: x, ty: y)
    }
    package static func scale(_ s: Double) -> PointTransform { PointTransform(a: s, d: s) }
}

/// Grey-image derivations for the fallback passes. Each returns a new packed grey image and
/// the transform from its coordinates back to its source's.
package enum GreyOps {
    /// Nearest-neighbour for upscaling (keeps module edges crisp), box average for downscaling.
    package static func scaled(_ g: ImageBuffer, by factor: Double) -> (ImageBuffer, PointTransform)
    {
        // Down: leptonica's area map, about 4x faster than ours (ScannerBenchmarks). Up: our
        // centred bilinear, which decoders read better than leptonica's (see scaledOwn).
        if factor < 1, let scaled = Leptonica.scaled(g, by: factor) { return scaled }
        return scaledOwn(g, by: factor)
    }

    package static func scaledOwn(_ g: ImageBuffer, by factor: Double) -> (
        ImageBuffer, PointTransform
    ) {
        let w = max(1, Int(Double(g.width) * factor))
        let h = max(1, Int(Double(g.height) * factor))
        var out = [UInt8](repeating: 0, count: w * h)
        g.pixels.withUnsafeBufferPointer { src in
            if factor >= 1 {
                // Centred bilinear: interpolated edges give the decoders sub-pixel positions,
                // and every module keeps its width (leptonica's linear interpolation maps
                // source pixels to the top-left of each block, so one-pixel modules come out
                // one or three pixels wide: fewer reads). Sources and weights per column
                // are computed once; the loop is integer arithmetic.
                let maxX = g.width - 1
                let maxY = g.height - 1
                var x0s = [Int](repeating: 0, count: w)
                var x1s = [Int](repeating: 0, count: w)
                var wxs = [Int](repeating: 0, count: w)
                for x in 0..<w {
                    let fx = max(0, (Double(x) + 0.5) / factor - 0.5)
                    x0s[x] = min(maxX, Int(fx))
                    x1s[x] = min(maxX, x0s[x] + 1)
                    wxs[x] = Int((fx - Double(x0s[x])) * 256)
                }
                x0s.withUnsafeBufferPointer { x0p in
                    x1s.withUnsafeBufferPointer { x1p in
                        wxs.withUnsafeBufferPointer { wxp in
                            out.withUnsafeMutableBufferPointer { o in
                                for y in 0..<h {
                                    let fy = max(0, (Double(y) + 0.5) / factor - 0.5)
                                    let y0 = min(maxY, Int(fy))
                                    let y1 = min(maxY, y0 + 1)
                                    let wy = Int((fy - Double(y0)) * 256)
                                    let r0 = y0 * g.stride
                                    let r1 = y1 * g.stride
                                    let row = y * w
                                    for x in 0..<w {
                                        let a = x0p[x]
                                        let b = x1p[x]
                                        let wx = wxp[x]
                                        let top =
                                            Int(src[r0 + a]) &* (256 &- wx) &+ Int(src[r0 + b])
                                            &* wx
                                        let bottom =
                                            Int(src[r1 + a]) &* (256 &- wx) &+ Int(src[r1 + b])
                                            &* wx
                                        o[row + x] = UInt8(
                                            truncatingIfNeeded: (top &* (256 &- wy) &+ bottom &* wy)
                                                >> 16
                                        )
                                    }
                                }
                            }
                        }
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
                        for yy in y0..<y1 {
                            for xx in x0..<x1 { sum += Int(src[yy * g.stride + xx]) }
                        }
                        out[y * w + x] = UInt8(sum / ((y1 - y0) * (x1 - x0)))
                    }
                }
            }
        }
        return (packed(width: w, height: h, out), .scale(Double(g.width) / Double(w)))
    }

    /// Light-on-dark to dark-on-light.
    package static func inverted(_ g: ImageBuffer) -> ImageBuffer {
        map(g) { 255 &- $0 }
    }

    /// Stretches the 1st..99th percentile of the histogram over the full range.
    package static func contrastStretched(_ g: ImageBuffer) -> ImageBuffer? {
        let histogram = histogram(g)
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
        for v in 0..<256 {
            table[v] = UInt8(max(0, min(255, (Double(v - low) / span * 255).rounded())))
        }
        return map(g) { table[Int($0)] }
    }

    /// A 3x3 box blur: joins broken modules and damps sensor noise and halftone dots.
    /// Ours: about twice as fast as leptonica's block convolution, which builds a 32-bit
    /// accumulator image first (ScannerBenchmarks).
    package static func blurred(_ g: ImageBuffer) -> ImageBuffer { blurredOwn(g) }

    package static func blurredOwn(_ g: ImageBuffer) -> ImageBuffer {
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
                        let column: UInt32 =
                            UInt32(r[up + x]) + UInt32(r[mid + x]) + UInt32(r[down + x])
                        o[mid + x] = UInt8(column / 9)
                    }
                }
            }
        }
        return packed(width: w, height: h, out)
    }

    /// Unsharp masking: `g + amount × (g − blur(g))`, the blur three box passes of `radius`
    /// (close to a Gaussian). Restores edges of out-of-focus 1D codes.
    package static func sharpened(_ g: ImageBuffer, radius: Int, amount: Double) -> ImageBuffer {
        // leptonica's one box pass is about 15x faster than our three (ScannerBenchmarks).
        Leptonica.sharpened(g, halfWidth: radius, amount: amount)
            ?? sharpenedOwn(g, radius: radius, amount: amount)
    }

    package static func sharpenedOwn(_ g: ImageBuffer, radius: Int, amount: Double) -> ImageBuffer {
        var blurred = g
        for _ in 0..<3 { blurred = boxBlurred(blurred, radius: radius) }
        let k = Int(amount * 256)
        var out = [UInt8](repeating: 0, count: g.width * g.height)
        for y in 0..<g.height {
            for x in 0..<g.width {
                let v = Int(g.pixels[y * g.stride + x])
                let b = Int(blurred.pixels[y * blurred.stride + x])
                out[y * g.width + x] = UInt8(max(0, min(255, v + ((v - b) * k) >> 8)))
            }
        }
        return packed(width: g.width, height: g.height, out)
    }

    /// A separable box blur of any radius with running sums (edges clamp).
    package static func boxBlurred(_ g: ImageBuffer, radius r: Int) -> ImageBuffer {
        let w = g.width
        let h = g.height
        let n = 2 * r + 1
        var tmp = [UInt8](repeating: 0, count: w * h)
        var out = [UInt8](repeating: 0, count: w * h)
        g.pixels.withUnsafeBufferPointer { src in
            tmp.withUnsafeMutableBufferPointer { t in
                for y in 0..<h {
                    let row = y * g.stride
                    var sum = 0
                    for i in -r...r { sum += Int(src[row + min(w - 1, max(0, i))]) }
                    for x in 0..<w {
                        t[y * w + x] = UInt8(sum / n)
                        sum += Int(src[row + min(w - 1, x + r + 1)]) - Int(src[row + max(0, x - r)])
                    }
                }
            }
        }
        tmp.withUnsafeBufferPointer { t in
            out.withUnsafeMutableBufferPointer { o in
                for x in 0..<w {
                    var sum = 0
                    for i in -r...r { sum += Int(t[min(h - 1, max(0, i)) * w + x]) }
                    for y in 0..<h {
                        o[y * w + x] = UInt8(sum / n)
                        sum += Int(t[min(h - 1, y + r + 1) * w + x]) - Int(t[max(0, y - r) * w + x])
                    }
                }
            }
        }
        return packed(width: w, height: h, out)
    }

    /// Turned a quarter clockwise on screen, pixel for pixel: nothing is resampled, so what
    /// reads in `g` reads the same turned (a turn by 89.5° through ``rotatedSharp(_:degrees:scale:)``
    /// softens every edge and takes a pixel more each way). With the transform back to `g`.
    package static func quarterTurned(_ g: ImageBuffer) -> (ImageBuffer, PointTransform) {
        let (w, h) = (g.width, g.height)
        var out = [UInt8](repeating: 255, count: w * h)
        out.withUnsafeMutableBufferPointer { o in
            g.pixels.withUnsafeBufferPointer { p in
                for y in 0..<h {
                    let row = y * g.stride
                    let column = h - 1 - y
                    for x in 0..<w { o[x * h + column] = p[row + x] }
                }
            }
        }
        // The pixel at (x', y') comes from (y', h - 1 - x'); points are measured from pixel
        // corners, as ``Rotation/back`` measures them.
        return (
            packed(width: h, height: w, out),
            PointTransform(a: 0, b: 1, c: -1, d: 0, tx: 0, ty: Double(h))
        )
    }

    /// Rotated by `degrees` around the centre on a white canvas large enough to hold it.
    package static func rotated(_ g: ImageBuffer, degrees: Double) -> (ImageBuffer, PointTransform)
    {
        // leptonica's area-mapped rotation is smoother and no slower (ScannerBenchmarks).
        Leptonica.rotated(g, degrees: degrees) ?? rotatedOwn(g, degrees: degrees)
    }

    package static func rotatedOwn(_ g: ImageBuffer, degrees: Double) -> (
        ImageBuffer, PointTransform
    ) {
        let rotation = Rotation(g, degrees: degrees)
        let (w, h, cosR, sinR) = (rotation.width, rotation.height, rotation.cosR, rotation.sinR)
        let (cx, cy, ox, oy) = (rotation.cx, rotation.cy, rotation.ox, rotation.oy)
        var out = [UInt8](repeating: 255, count: w * h)
        for y in 0..<h {
            let dy = Double(y) - oy
            for x in 0..<w {
                let dx = Double(x) - ox
                // Inverse rotation: where this output pixel comes from.
                let sx = Int((cosR * dx + sinR * dy + cx).rounded(.down))
                let sy = Int((-sinR * dx + cosR * dy + cy).rounded(.down))
                if sx >= 0, sx < g.width, sy >= 0, sy < g.height {
                    out[y * w + x] = g.pixels[sy * g.stride + sx]
                }
            }
        }
        return (packed(width: w, height: h, out), rotation.back)
    }

    /// The canvas and centres of an image rotated by `degrees` around its centre: the canvas
    /// is just large enough to hold the rotated image. Shared by ``rotated(_:degrees:)`` and
    /// the OCR's smooth rotation so both map points back the same way.
    package struct Rotation {
        package let cosR: Double
        package let sinR: Double
        /// The rotated canvas's size.
        package let width: Int
        package let height: Int
        /// The source's centre.
        package let cx: Double
        package let cy: Double
        /// The canvas's centre.
        package let ox: Double
        package let oy: Double

        package init(_ g: ImageBuffer, degrees: Double) {
            let r = degrees * .pi / 180
            cosR = cos(r)
            sinR = sin(r)
            width = Int((abs(Double(g.width) * cosR) + abs(Double(g.height) * sinR)).rounded(.up))
            height = Int((abs(Double(g.width) * sinR) + abs(Double(g.height) * cosR)).rounded(.up))
            cx = Double(g.width) / 2
            cy = Double(g.height) / 2
            ox = Double(width) / 2
            oy = Double(height) / 2
        }

        /// From canvas coordinates back to the source's.
        package var back: PointTransform {
            PointTransform(
                a: cosR,
                b: sinR,
                c: -sinR,
                d: cosR,
                tx: -cosR * ox - sinR * oy + cx,
                ty: sinR * ox - cosR * oy + cy
            )
        }
    }

    /// How many pixels of each grey level `g` has.
    package static func histogram(_ g: ImageBuffer) -> [Int] {
        var histogram = [Int](repeating: 0, count: 256)
        for y in 0..<g.height {
            let row = y * g.stride
            for x in 0..<g.width { histogram[Int(g.pixels[row + x])] += 1 }
        }
        return histogram
    }

    /// `g` inside a frame of `border` white pixels on every side.
    package static func framed(_ g: ImageBuffer, border: Int) -> ImageBuffer {
        let w = g.width + 2 * border
        let h = g.height + 2 * border
        var out = [UInt8](repeating: 255, count: w * h)
        for y in 0..<g.height {
            for x in 0..<g.width {
                out[(y + border) * w + x + border] = g.pixels[y * g.stride + x]
            }
        }
        return packed(width: w, height: h, out)
    }

    /// A packed grey image (stride = width) of `pixels`.
    package static func packed(width: Int, height: Int, _ pixels: [UInt8]) -> ImageBuffer {
        ImageBuffer(
            uncheckedWidth: width,
            height: height,
            format: .grey,
            stride: width,
            pixels: pixels
        )
    }

    private static func map(_ g: ImageBuffer, _ f: (UInt8) -> UInt8) -> ImageBuffer {
        var out = [UInt8](repeating: 0, count: g.width * g.height)
        for y in 0..<g.height {
            for x in 0..<g.width { out[y * g.width + x] = f(g.pixels[y * g.stride + x]) }
        }
        return packed(width: g.width, height: g.height, out)
    }
}

extension GreyOps {
    /// The mean length of light and dark runs along eight rows (and eight columns when
    /// `columnsToo`), in pixels: about 1.5-2 × the module size of a symbol, larger for coarse
    /// texture. A run ends where the pixel crosses the row's mean by more than a small margin
    /// (noise does not split runs).
    package static func meanRun(_ g: ImageBuffer, columnsToo: Bool) -> Double {
        var runs = 0
        var length = 0
        func scan(count: Int, _ pixel: (Int) -> Int) {
            guard count > 2 else { return }
            var sum = 0
            for i in 0..<count { sum += pixel(i) }
            let mean = sum / count
            var state = 0
            for i in 0..<count {
                let v = pixel(i)
                let next = v > mean + 6 ? 1 : (v < mean - 6 ? -1 : state)
                if next != state {
                    if state != 0 { runs += 1 }
                    state = next
                }
            }
            length += count
        }
        g.pixels.withUnsafeBufferPointer { p in
            for k in 1...8 {
                let y = g.height * k / 9
                scan(count: g.width) { Int(p[y * g.stride + $0]) }
                if columnsToo {
                    let x = g.width * k / 9
                    scan(count: g.height) { Int(p[$0 * g.stride + x]) }
                }
            }
        }
        return runs == 0 ? .infinity : Double(length) / Double(runs)
    }
}

extension GreyOps {
    /// Whether the outer eighth of the image (all four sides) is clearly darker than its
    /// middle: the quiet zone of a light-on-dark symbol.
    package static func borderIsDarker(_ g: ImageBuffer) -> Bool {
        guard g.width >= 16, g.height >= 16 else { return false }
        let bx = g.width / 8
        let by = g.height / 8
        var (border, borderCount, middle, middleCount) = (0, 0, 0, 0)
        g.pixels.withUnsafeBufferPointer { p in
            for y in Swift.stride(from: 0, to: g.height, by: 2) {
                let row = y * g.stride
                let edgeRow = y < by || y >= g.height - by
                for x in Swift.stride(from: 0, to: g.width, by: 2) {
                    let v = Int(p[row + x])
                    if edgeRow || x < bx || x >= g.width - bx {
                        border += v
                        borderCount += 1
                    } else if x >= 2 * bx, x < g.width - 2 * bx, y >= 2 * by, y < g.height - 2 * by
                    {
                        middle += v
                        middleCount += 1
                    }
                }
            }
        }
        guard borderCount > 0, middleCount > 0 else { return false }
        return border / borderCount + 16 < middle / middleCount
    }
}
