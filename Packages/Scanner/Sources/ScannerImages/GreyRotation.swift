import Foundation

extension GreyOps {
    /// Rotated by `degrees` (clockwise on screen) around the centre and scaled by `scale`, in
    /// one resampling with Catmull-Rom (bicubic) interpolation, on a white canvas just large
    /// enough (``Rotation``'s geometry times `scale`).
    ///
    /// Sharper than ``rotated(_:degrees:)``'s area map: a module one or two pixels wide keeps
    /// its edges instead of spreading into grey, which is what a PDF417's rows or a small 1D
    /// code turned by an odd angle need to read again (the dev corpus's PDF417s at odd
    /// angles, turned back by their known angle: bilinear 5 of 9, Catmull-Rom 7, Catmull-Rom
    /// with `scale` 2 8). Turning and scaling at once resamples the pixels once, where
    /// scaling the turned image would blur them twice. Integer arithmetic: positions in
    /// 1/65536 pixel, weights by the 1/64 pixel.
    package static func rotatedSharp(
        _ g: ImageBuffer,
        degrees: Double,
        scale: Double = 1
    ) -> (ImageBuffer, PointTransform) {
        let rotation = Rotation(g, degrees: degrees)
        let s = max(scale, 0.25)
        let w = max(1, Int((Double(rotation.width) * s).rounded()))
        let h = max(1, Int((Double(rotation.height) * s).rounded()))
        let out = catmullRomSample(
            g,
            cosR: rotation.cosR,
            sinR: rotation.sinR,
            centre: (rotation.cx, rotation.cy),
            offset: (rotation.ox, rotation.oy),
            scale: s,
            width: w,
            height: h
        )
        return (
            packed(width: w, height: h, out),
            rotation.back.after(
                PointTransform(
                    a: Double(rotation.width) / Double(w),
                    d: Double(rotation.height) / Double(h)
                )
            )
        )
    }

    /// The rectangle of `width` × `height` source pixels centred on `centre`, its rows along
    /// the direction `degrees` clockwise on screen from the image's rows (the direction
    /// ``rotatedSharp(_:degrees:scale:)`` by `-degrees` turns upright), scaled by
    /// `scale`: that rotation's result cut to the rectangle, resampled the same way but
    /// only where the rectangle lies. A small symbol at an odd angle, read again, needs its
    /// own few thousand pixels turned, not the canvas around its bounding box. Outside the
    /// image reads white.
    package static func orientedRect(
        _ g: ImageBuffer,
        centre: (x: Double, y: Double),
        degrees: Double,
        width: Double,
        height: Double,
        scale: Double
    ) -> (ImageBuffer, PointTransform) {
        let r = -degrees * .pi / 180
        let (cosR, sinR) = (cos(r), sin(r))
        let s = max(scale, 0.25)
        let w = max(1, Int((width * s).rounded()))
        let h = max(1, Int((height * s).rounded()))
        let (ox, oy) = (Double(w) / s / 2, Double(h) / s / 2)
        let out = catmullRomSample(
            g,
            cosR: cosR,
            sinR: sinR,
            centre: centre,
            offset: (ox, oy),
            scale: s,
            width: w,
            height: h
        )
        let back = PointTransform(
            a: cosR,
            b: sinR,
            c: -sinR,
            d: cosR,
            tx: -cosR * ox - sinR * oy + centre.x,
            ty: sinR * ox - cosR * oy + centre.y
        )
        return (packed(width: w, height: h, out), back.after(.scale(1 / s)))
    }

    /// A `width` × `height` image whose pixel centre (x + 0.5, y + 0.5), divided by `scale`
    /// and less `offset`, is turned by the rotation (cosR, sinR) onto `centre` of `g`
    /// (pixel centres at half pixels); Catmull-Rom interpolation, white outside `g`.
    private static func catmullRomSample(
        _ g: ImageBuffer,
        cosR: Double,
        sinR: Double,
        centre: (x: Double, y: Double),
        offset: (x: Double, y: Double),
        scale s: Double,
        width w: Int,
        height h: Int
    ) -> [UInt8] {
        var out = [UInt8](repeating: 255, count: w * h)
        let (cx, cy, ox, oy) = (centre.x, centre.y, offset.x, offset.y)
        let (sw, sh, stride) = (g.width, g.height, g.stride)
        // Positions in 1/65536 pixel, weights from a table by the 1/64 phase (each row of four
        // sums to 256): integer arithmetic in the loop.
        let table = catmullRomTable
        let du = Int((cosR / s * 65536).rounded())
        let dv = Int((-sinR / s * 65536).rounded())
        let (maxU, maxV) = (sw << 16, sh << 16)
        g.pixels.withUnsafeBufferPointer { src in
            table.withUnsafeBufferPointer { wt in
                out.withUnsafeMutableBufferPointer { o in
                    for y in 0..<h {
                        // Where this row's first pixel centre comes from, with the source's
                        // pixel centres at whole numbers; then a step per pixel.
                        let dx = 0.5 / s - ox
                        let dy = (Double(y) + 0.5) / s - oy
                        var u = Int(((cosR * dx + sinR * dy + cx - 0.5) * 65536).rounded())
                        var v = Int(((-sinR * dx + cosR * dy + cy - 0.5) * 65536).rounded())
                        let rowOut = y * w
                        for x in 0..<w {
                            defer {
                                u &+= du
                                v &+= dv
                            }
                            guard u > -65536, v > -65536, u < maxU, v < maxV else { continue }
                            let iu = u >> 16
                            let iv = v >> 16
                            let wx = ((u >> 10) & 63) << 2
                            let wy = ((v >> 10) & 63) << 2
                            var sum = 0
                            if iu >= 1, iv >= 1, iu + 2 < sw, iv + 2 < sh {
                                var row = (iv - 1) * stride + iu - 1
                                for j in 0..<4 {
                                    // Two halves with their types said: as one expression
                                    // the type checker took 2.9 s over it.
                                    let left: Int =
                                        wt[wx] &* Int(src[row]) &+ wt[wx + 1] &* Int(src[row + 1])
                                    let right: Int =
                                        wt[wx + 2] &* Int(src[row + 2])
                                        &+ wt[wx + 3] &* Int(src[row + 3])
                                    sum &+= wt[wy + j] &* (left &+ right)
                                    row &+= stride
                                }
                            } else {
                                // Near the border: taps outside the image read white, as the
                                // canvas around it is.
                                for j in 0..<4 {
                                    let yy = iv - 1 + j
                                    var r = 0
                                    for i in 0..<4 {
                                        let xx = iu - 1 + i
                                        let p =
                                            xx >= 0 && xx < sw && yy >= 0 && yy < sh
                                            ? Int(src[yy * stride + xx]) : 255
                                        r &+= wt[wx + i] &* p
                                    }
                                    sum &+= wt[wy + j] &* r
                                }
                            }
                            o[rowOut + x] = UInt8(max(0, min(255, (sum &+ 32768) >> 16)))
                        }
                    }
                }
            }
        }
        return out
    }

    /// Catmull-Rom weights for taps at -1, 0, 1, 2 of a sample 0/64..63/64 of a pixel past
    /// tap 0, four per phase, each four summing to 256.
    static let catmullRomTable: [Int] = (0..<64).flatMap { phase -> [Int] in
        let t = Double(phase) / 64
        let t2 = t * t
        let t3 = t2 * t
        let w = [
            0.5 * (-t3 + 2 * t2 - t),
            0.5 * (3 * t3 - 5 * t2 + 2),
            0.5 * (-3 * t3 + 4 * t2 + t),
            0.5 * (t3 - t2),
        ].map { Int(($0 * 256).rounded()) }
        // Rounding may leave the sum off by one: the largest weight takes the difference.
        var fixed = w
        let largest = w.indices.max { w[$0] < w[$1] }!
        fixed[largest] += 256 - w.reduce(0, +)
        return fixed
    }
}
