import Benchmark
import Foundation
@_spi(Benchmarks) import Scanner

// Decoding and scanning single images from the dev corpus ($SHOPFLOOR_CORPUS/barcodes):
// a clean QR PNG, an EAN-13 photo (WebP), and a photo without any code, which runs every
// balanced fallback pass (the worst case per image). The comparison with zbarimg on the
// whole corpus is compare/scan-vs-zbarimg.sh.

private let corpus: URL = {
    let root =
        ProcessInfo.processInfo.environment["SHOPFLOOR_CORPUS"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/corpus").path
    return URL(fileURLWithPath: root).appendingPathComponent("barcodes")
}()

private func load(_ path: String) -> Data {
    (try? Data(contentsOf: corpus.appendingPathComponent(path))) ?? Data()
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        maxDuration: .seconds(3),
        // More than 10% worse at p90 than Benchmarks/Thresholds fails `make bench`.
        thresholds: [
            .wallClock: .init(relative: [.p90: 10]),
            .mallocCountTotal: .init(relative: [.p90: 10]),
        ]
    )
    let reader = BarcodeReader()
    let cases = [
        ("QR PNG", "qrcode-2/1.png"), ("EAN-13 photo", "ean13-1/10.webp"),
        ("no code photo", "falsepositives-1/01.webp"),
    ]
    for (label, path) in cases {
        let data = load(path)
        Benchmark("ImageBuffer decode: \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try? ImageBuffer(data: data)) }
        }
        guard let image = try? ImageBuffer(data: data) else { continue }
        Benchmark("BarcodeReader.scan balanced: \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(reader.scan(image)) }
        }
    }
    let photo =
        (try? ImageBuffer(data: load("ean13-1/10.webp")))
        ?? (try! ImageBuffer(width: 1, height: 1, format: .grey, pixels: [0]))
    Benchmark("ImageBuffer grey view of an RGB photo (first use)") { benchmark in
        for _ in benchmark.scaledIterations {
            let copy = try! ImageBuffer(
                width: photo.width,
                height: photo.height,
                format: photo.format,
                stride: photo.stride,
                pixels: photo.pixels
            )
            blackHole(copy.greyscale())
        }
    }

    // Hand-written image operations against leptonica's (issue 19): the library keeps the
    // faster; both stay here so the choice can be re-checked.
    let grey = photo.greyscale()
    let operations: [(String, @Sendable (ImageBuffer) -> ImageBuffer?)] = [
        ("scale x2 own", { ImageOperationVariants.scaledOwn($0, by: 2) }),
        ("scale x2 leptonica", { ImageOperationVariants.scaledLeptonica($0, by: 2) }),
        ("scale x3 own", { ImageOperationVariants.scaledOwn($0, by: 3) }),
        ("scale x3 leptonica", { ImageOperationVariants.scaledLeptonica($0, by: 3) }),
        ("scale x0.5 own", { ImageOperationVariants.scaledOwn($0, by: 0.5) }),
        ("scale x0.5 leptonica", { ImageOperationVariants.scaledLeptonica($0, by: 0.5) }),
        ("blur 3x3 own", { ImageOperationVariants.blurredOwn($0) }),
        ("blur 3x3 leptonica", { ImageOperationVariants.blurredLeptonica($0) }),
        ("sharpen own", { ImageOperationVariants.sharpenedOwn($0) }),
        ("sharpen leptonica", { ImageOperationVariants.sharpenedLeptonica($0) }),
        ("rotate 30 own nearest", { ImageOperationVariants.rotatedOwn($0, degrees: 30) }),
        ("rotate 30 own bilinear", { ImageOperationVariants.rotatedSmoothOwn($0, degrees: 30) }),
        ("rotate 30 leptonica", { ImageOperationVariants.rotatedLeptonica($0, degrees: 30) }),
    ]
    for (label, operation) in operations {
        Benchmark("Image operation \(grey.width)x\(grey.height): \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(operation(grey)) }
        }
    }
}
