import Foundation
import InMemoryLogging
import Logging
import Testing

@testable import ScannerBarcodes
@testable import ScannerImages

/// 2D symbols on curved labels (a bottle, a can): ``GreyOps/cylinderFlattened`` and the
/// region search's "cylinder" stage.
@Suite("Labels wrapped round a cylinder")
struct CylinderTests {
    /// `label` wrapped round a cylinder whose half angle over the label's width is
    /// `halfAngle`, axis vertical through the label's middle, photographed from `distance`
    /// radii (`.infinity`: from afar) with one label pixel to `scale` image pixels at the
    /// facing line, on a ground of `ground`, `margin` pixels around: the model
    /// ``GreyOps/cylinderFlattened`` undoes, drawn independently (bisection per column,
    /// bilinear samples).
    static func wrapped(
        _ label: ImageBuffer,
        halfAngle: Double,
        distance: Double,
        scale: Double,
        ground: UInt8 = 110,
        margin: Int = 30
    ) -> ImageBuffer {
        let r = Double(label.width) / 2 / halfAngle
        func k(_ t: Double) -> Double {
            distance.isFinite ? (distance - 1) / (distance - cos(t)) : 1
        }
        func offset(_ t: Double) -> Double { r * sin(t) * k(t) * scale }
        let half = offset(halfAngle)
        let width = Int(2 * half) + 2 * margin
        let height = Int(Double(label.height) * scale) + 2 * margin
        var pixels = [UInt8](repeating: ground, count: width * height)
        for x in 0..<width {
            let dx = Double(x) + 0.5 - Double(width) / 2
            guard abs(dx) < half else { continue }
            var (low, high) = (-halfAngle, halfAngle)
            for _ in 0..<50 {
                let mid = (low + high) / 2
                if offset(mid) < dx { low = mid } else { high = mid }
            }
            let t = (low + high) / 2
            let u = r * t + Double(label.width) / 2 - 0.5
            for y in 0..<height {
                let dy = (Double(y) + 0.5 - Double(height) / 2) / scale / k(t)
                let v = dy + Double(label.height) / 2 - 0.5
                let (u0, v0) = (Int(u.rounded(.down)), Int(v.rounded(.down)))
                guard u0 >= 0, v0 >= 0, u0 + 1 < label.width, v0 + 1 < label.height else {
                    continue
                }
                let (fu, fv) = (u - Double(u0), v - Double(v0))
                func at(_ xx: Int, _ yy: Int) -> Double { Double(label.luminance(x: xx, y: yy)) }
                let value =
                    at(u0, v0) * (1 - fu) * (1 - fv) + at(u0 + 1, v0) * fu * (1 - fv)
                    + at(u0, v0 + 1) * (1 - fu) * fv + at(u0 + 1, v0 + 1) * fu * fv
                pixels[y * width + x] = UInt8(max(0, min(255, value.rounded())))
            }
        }
        return GreyOps.packed(width: width, height: height, pixels)
    }

    /// Vertical stripes `period` pixels apart.
    static func stripes(width: Int, height: Int, period: Int) -> ImageBuffer {
        var pixels = [UInt8](repeating: 255, count: width * height)
        for y in 0..<height {
            for x in 0..<width where (x / (period / 2)) % 2 == 0 { pixels[y * width + x] = 0 }
        }
        return GreyOps.packed(width: width, height: height, pixels)
    }

    /// Where the middle row of `image` crosses mid-grey going dark, in pixels.
    static func darkEdges(_ image: ImageBuffer) -> [Double] {
        let y = image.height / 2
        var edges: [Double] = []
        for x in 1..<image.width {
            let a = Double(image.luminance(x: x - 1, y: y))
            let b = Double(image.luminance(x: x, y: y))
            if a >= 128, b < 128 { edges.append(Double(x - 1) + (a - 128) / (a - b)) }
        }
        return edges
    }

    @Test(
        "Unrolled with the cylinder it was wrapped on, stripes are evenly spaced again",
        arguments: [(0.9, Double.infinity), (0.8, 3.0)]
    )
    func flattenedStripes(cylinder: (halfAngle: Double, distance: Double)) throws {
        let label = Self.stripes(width: 240, height: 60, period: 12)
        let photo = Self.wrapped(
            label,
            halfAngle: cylinder.halfAngle,
            distance: cylinder.distance,
            scale: 1,
            ground: 255
        )
        // Squeezed towards the sides: the outermost spacing well under the middle's.
        let seen = zip(Self.darkEdges(photo).dropFirst(), Self.darkEdges(photo)).map { $0 - $1 }
        #expect(seen.count >= 15)
        #expect(try #require(seen.first) < 0.75 * seen[seen.count / 2], "\(seen)")

        let flat = GreyOps.cylinderFlattened(
            photo,
            axis: .vertical,
            centre: Double(photo.width) / 2,
            middle: Double(photo.height) / 2,
            radius: 120 / cylinder.halfAngle,
            distance: cylinder.distance,
            scale: 1
        )
        let edges = Self.darkEdges(flat.image)
        let spacing = zip(edges.dropFirst(), edges).map { $0 - $1 }
        #expect(spacing.count >= 15)
        // (The outermost stripes, at the cylinder's side, are sampled too coarsely to say.)
        for gap in spacing.dropFirst().dropLast() { #expect(abs(gap - 12) < 1, "\(spacing)") }
        // The way back lands every edge where the photo has it.
        let back = edges.map { flat.back($0, Double(flat.image.height) / 2).x }
        let photoEdges = Self.darkEdges(photo)
        for x in back { #expect(photoEdges.contains { abs($0 - x) < 1 }, "\(x) in \(photoEdges)") }
    }

    @Test(
        "A QR code on a can reads through the cylinder stage, its corners on the label",
        arguments: [(1.1, Double.infinity, false), (0.8, 3.0, true)]
    )
    func qrCodeOnACan(cylinder: (halfAngle: Double, distance: Double, blurred: Bool)) throws {
        let text = "curved label 0042"
        let label = try ImageBuffer(
            data: Fixtures.qrencode(text, extra: ["-s", "4", "-m", "3"]),
            name: "qr"
        ).greyscale()
        // 2.5 px modules at the facing line, 1.1-1.8 px at the sides: ZXing locates the
        // symbol, and every stage before the cylinder fails to read it.
        var photo = Self.wrapped(
            label,
            halfAngle: cylinder.halfAngle,
            distance: cylinder.distance,
            scale: 0.625
        )
        if cylinder.blurred { photo = GreyOps.blurred(photo) }
        let log = InMemoryLogHandler()
        var logger = Logger(label: "cylinder") { _ in log }
        logger.logLevel = .debug
        let codes = BarcodeReader(options: .standard, logger: logger).scan(photo)
        #expect(codes.map(\.text) == [text])
        // Every stage before it failed: this is the cylinder's reading.
        let regions = log.entries.filter { $0.message.description == "scanner region" }
        #expect(
            regions.contains { $0.metadata["name"].map { "\($0)" } == "cylinder" },
            "\(regions.map(\.metadata))"
        )
        // Its corners, mapped back through the cylinder, lie on the label in the photo
        // (30 px of ground around it), not in the unrolled image's coordinates.
        let box = PixelRect(bounding: try #require(codes.first).points)
        #expect(box.x >= 28 && box.y >= 28, "\(box)")
        #expect(box.x + box.width <= photo.width - 28, "\(box) in \(photo.width)")
        #expect(box.y + box.height <= photo.height - 28, "\(box) in \(photo.height)")
        // (The label is 27 modules wide, the symbol 21: its box takes in most of the label.)
        #expect(box.width >= (photo.width - 60) / 2, "\(box) in \(photo.width)")
    }
}
