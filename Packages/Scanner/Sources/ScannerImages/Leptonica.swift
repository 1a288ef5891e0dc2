package import CLeptonica
import Foundation

/// One leptonica image, owned: destroyed when this goes away. Never shared across threads.
package final class LeptPix {
    package let pointer: UnsafeMutablePointer<PIX>

    package init?(_ pointer: UnsafeMutablePointer<PIX>?) {
        guard let pointer else { return nil }
        self.pointer = pointer
    }

    deinit {
        var p: UnsafeMutablePointer<PIX>? = pointer
        pixDestroy(&p)
    }

    package var width: Int { Int(pixGetWidth(pointer)) }
    package var height: Int { Int(pixGetHeight(pointer)) }

    /// An 8-bit leptonica copy of a grey image. Leptonica keeps 8-bit pixels in 32-bit words,
    /// most significant byte first, so rows are copied and then byte-swapped per word.
    convenience init?(grey g: ImageBuffer) {
        Leptonica.configure()
        self.init(pixCreateNoInit(Int32(g.width), Int32(g.height), 8))
        let wpl = Int(pixGetWpl(pointer))
        guard let data = pixGetData(pointer) else { return nil }
        let raw = UnsafeMutableRawPointer(data)
        g.pixels.withUnsafeBytes { src in
            guard let base = src.baseAddress else { return }
            for y in 0..<g.height {
                let row = raw + y * wpl * 4
                memcpy(row, base + y * g.stride, g.width)
                // Padding at the row's end: defined, so no operation reads garbage.
                let padding = wpl * 4 - g.width
                if padding > 0 { memset(row + g.width, 255, padding) }
            }
        }
        pixEndianByteSwap(pointer)
    }

    /// The pixels as a packed grey image (consumes the byte order: call once).
    func greyImage() -> ImageBuffer {
        let w = width
        let h = height
        pixEndianByteSwap(pointer)
        let wpl = Int(pixGetWpl(pointer))
        var out = [UInt8](repeating: 0, count: w * h)
        if let data = pixGetData(pointer) {
            let raw = UnsafeRawPointer(data)
            out.withUnsafeMutableBytes { dst in
                guard let base = dst.baseAddress else { return }
                for y in 0..<h { memcpy(base + y * w, raw + y * wpl * 4, w) }
            }
        }
        return GreyOps.packed(width: w, height: h, out)
    }
}

/// Grey-image operations through leptonica, with the transforms that map their points back.
package enum Leptonica {
    private static let quiet: Void = {
        // Leptonica prints warnings and errors to stderr unless told otherwise.
        setMsgSeverity(Int32(L_SEVERITY_NONE))
    }()

    package static func configure() { _ = quiet }

    /// Linear interpolation up (a specialised 2× path), area mapping down.
    package static func scaled(_ g: ImageBuffer, by factor: Double) -> (
        ImageBuffer, PointTransform
    )? {
        scaled(g, x: factor, y: factor)
    }

    /// Scaled by `x` horizontally and `y` vertically (both up or both down).
    static func scaled(_ g: ImageBuffer, x: Double, y: Double) -> (ImageBuffer, PointTransform)? {
        guard let pix = LeptPix(grey: g) else { return nil }
        let result: LeptPix?
        if x >= 1, y >= 1 {
            result = LeptPix(pixScaleGrayLI(pix.pointer, Float(x), Float(y)))
        } else {
            result = LeptPix(pixScaleAreaMap(pix.pointer, Float(x), Float(y)))
        }
        guard let result else { return nil }
        let image = result.greyImage()
        return (
            image,
            PointTransform(
                a: Double(g.width) / Double(image.width),
                d: Double(g.height) / Double(image.height)
            )
        )
    }

    /// A (2·radius+1)² box blur.
    package static func blurred(_ g: ImageBuffer, radius: Int = 1) -> ImageBuffer? {
        guard let pix = LeptPix(grey: g),
            let result = LeptPix(pixBlockconvGray(pix.pointer, nil, Int32(radius), Int32(radius)))
        else { return nil }
        return result.greyImage()
    }

    /// Unsharp masking: `g + amount × (g − blur(g))` with a (2·halfWidth+1)² box blur.
    package static func sharpened(_ g: ImageBuffer, halfWidth: Int, amount: Double) -> ImageBuffer?
    {
        guard let pix = LeptPix(grey: g),
            let result = LeptPix(
                pixUnsharpMaskingGray(pix.pointer, Int32(halfWidth), Float(amount))
            )
        else { return nil }
        return result.greyImage()
    }

    /// Rotated by `degrees` (clockwise on screen) around the centre, with area-mapped
    /// interpolation, on a white canvas just large enough (the geometry of
    /// ``GreyOps/Rotation``, so points map back the same way).
    package static func rotated(_ g: ImageBuffer, degrees: Double) -> (ImageBuffer, PointTransform)?
    {
        let rotation = GreyOps.Rotation(g, degrees: degrees)
        guard let pix = LeptPix(grey: g) else { return nil }
        let left = (rotation.width - g.width) / 2
        let top = (rotation.height - g.height) / 2
        guard
            let canvas = LeptPix(
                pixAddBorderGeneral(
                    pix.pointer,
                    Int32(left),
                    Int32(rotation.width - g.width - left),
                    Int32(top),
                    Int32(rotation.height - g.height - top),
                    255
                )
            ),
            let result = LeptPix(
                pixRotateAMGray(canvas.pointer, Float(degrees * .pi / 180), 255)
            )
        else { return nil }
        // The canvas centre is the source centre moved by the border; rotating about the
        // canvas centre is GreyOps.Rotation's mapping up to that sub-pixel shift.
        return (result.greyImage(), rotation.back)
    }
}

extension LeptPix {
    /// PNG bytes of this image (leptonica's writer, through libpng).
    func pngData() -> Data? {
        var bytes: UnsafeMutablePointer<UInt8>?
        var size = 0
        guard pixWriteMem(&bytes, &size, pointer, Int32(IFF_PNG)) == 0, let bytes else {
            return nil
        }
        defer { free(bytes) }
        return Data(bytes: bytes, count: size)
    }
}

extension LeptPix {
    /// A 32-bit RGB leptonica copy of any image (alpha dropped).
    package convenience init?(rgb image: ImageBuffer) {
        Leptonica.configure()
        self.init(pixCreateNoInit(Int32(image.width), Int32(image.height), 32))
        guard let data = pixGetData(pointer) else { return nil }
        let wpl = Int(pixGetWpl(pointer))
        let channels = image.format.channels
        image.pixels.withUnsafeBufferPointer { src in
            for y in 0..<image.height {
                let row = data + y * wpl
                let offset = y * image.stride
                for x in 0..<image.width {
                    let i = offset + x * channels
                    let r = UInt32(src[i])
                    let g = channels >= 3 ? UInt32(src[i + 1]) : r
                    let b = channels >= 3 ? UInt32(src[i + 2]) : r
                    row[x] = r << 24 | g << 16 | b << 8
                }
            }
        }
    }

    /// The pixels of a 32-bit leptonica image as packed RGB.
    package func rgbImage() -> ImageBuffer {
        let w = width
        let h = height
        var out = [UInt8](repeating: 0, count: w * h * 3)
        if let data = pixGetData(pointer) {
            let wpl = Int(pixGetWpl(pointer))
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<h {
                    let row = data + y * wpl
                    var o = y * w * 3
                    for x in 0..<w {
                        let v = row[x]
                        dst[o] = UInt8(truncatingIfNeeded: v >> 24)
                        dst[o + 1] = UInt8(truncatingIfNeeded: v >> 16)
                        dst[o + 2] = UInt8(truncatingIfNeeded: v >> 8)
                        o += 3
                    }
                }
            }
        }
        return ImageBuffer(uncheckedWidth: w, height: h, format: .rgb, stride: w * 3, pixels: out)
    }
}
