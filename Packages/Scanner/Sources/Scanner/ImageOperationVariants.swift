public import ScannerImages
import ScannerText

/// The image operations of the barcode and text passes, each in the hand-written version and
/// leptonica's, for `Benchmarks/ScannerBenchmarks` to compare (issue 19: leptonica unless our
/// own is measurably faster). Not API: the SPI may change with any release.
@_spi(Benchmarks) public enum ImageOperationVariants {
    /// Scaling by `factor` (bilinear up, box average down), hand-written.
    public static func scaledOwn(_ g: ImageBuffer, by factor: Double) -> ImageBuffer {
        GreyOps.scaledOwn(g, by: factor).0
    }
    /// Scaling by `factor` (linear interpolation up, area map down), leptonica.
    public static func scaledLeptonica(_ g: ImageBuffer, by factor: Double) -> ImageBuffer? {
        Leptonica.scaled(g, by: factor)?.0
    }
    /// 3×3 box blur, hand-written.
    public static func blurredOwn(_ g: ImageBuffer) -> ImageBuffer { GreyOps.blurredOwn(g) }
    /// 3×3 box blur, leptonica.
    public static func blurredLeptonica(_ g: ImageBuffer) -> ImageBuffer? { Leptonica.blurred(g) }
    /// Unsharp masking, hand-written (three box passes of radius 2, amount 1.5).
    public static func sharpenedOwn(_ g: ImageBuffer) -> ImageBuffer {
        GreyOps.sharpenedOwn(g, radius: 2, amount: 1.5)
    }
    /// Unsharp masking, leptonica (5×5 box, amount 1.5).
    public static func sharpenedLeptonica(_ g: ImageBuffer) -> ImageBuffer? {
        Leptonica.sharpened(g, halfWidth: 2, amount: 1.5)
    }
    /// Rotation by `degrees` on a white canvas, hand-written (nearest neighbour).
    public static func rotatedOwn(_ g: ImageBuffer, degrees: Double) -> ImageBuffer {
        GreyOps.rotatedOwn(g, degrees: degrees).0
    }
    /// Rotation by `degrees` on a white canvas, hand-written (bilinear, the OCR's).
    public static func rotatedSmoothOwn(_ g: ImageBuffer, degrees: Double) -> ImageBuffer {
        TextPreprocess.rotatedSmooth(g, degrees: degrees).0
    }
    /// Rotation by `degrees` on a white canvas, leptonica (area mapping).
    public static func rotatedLeptonica(_ g: ImageBuffer, degrees: Double) -> ImageBuffer? {
        Leptonica.rotated(g, degrees: degrees)?.0
    }
}
