import Foundation
@_spi(Benchmarks) import Scanner
import Testing

/// The image operations the barcode and text passes use: leptonica's where they are faster,
/// ours where they are not (Benchmarks/ScannerBenchmarks), checked against plain references.
@Suite("Image operations")
struct ImageOperationTests {
    /// A deterministic grey image with gradients, edges and noise.
    static func sample(width: Int, height: Int, seed: UInt64) -> ImageBuffer {
        var generator = SeededGenerator(seed: seed)
        var pixels = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let base = ((x / 3 + y / 5) % 2 == 0) ? 40 : 210
                pixels[y * width + x] = UInt8(
                    clamping: base + Int.random(in: -30...30, using: &generator)
                )
            }
        }
        return try! ImageBuffer(width: width, height: height, format: .grey, pixels: pixels)
    }

    @Test(
        "scaling by 2 with leptonica keeps the pixels where bilinear scaling puts them",
        arguments: [(1, 1), (3, 2), (5, 7), (64, 33), (101, 57)]
    )
    func scaleTwo(width: Int, height: Int) throws {
        let g = Self.sample(width: width, height: height, seed: UInt64(width * 1000 + height))
        let lept = try #require(ImageOperationVariants.scaledLeptonica(g, by: 2))
        #expect(lept.width == 2 * width && lept.height == 2 * height)
        // Every source pixel's value appears, within interpolation error, at its 2x2 block.
        var worst = 0
        for y in 0..<height {
            for x in 0..<width {
                let v = Int(g.pixels[y * width + x])
                let u = Int(lept.pixels[(2 * y) * lept.stride + 2 * x])
                worst = max(worst, abs(u - v))
            }
        }
        #expect(worst <= 2, "leptonica's 2x pixel at (2x, 2y) differs from the source by \(worst)")
    }
}
