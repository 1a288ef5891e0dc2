public import Foundation
public import ScannerImages

/// What a batch scan found in one input.
public struct BarcodeScanResult: Sendable {
    /// The input's name.
    public var name: String
    /// Its position in the batch.
    public var index: Int
    /// The symbols found (empty when none or when the input could not be decoded).
    public var barcodes: [Barcode]
    /// Why the input could not be decoded, if it could not.
    public var error: ImageError?
}

extension BarcodeReader {
    /// Scans many inputs on up to `jobs` threads; results arrive in input order.
    public func scan(
        _ inputs: [ScanInput],
        jobs: Int = ImageBatch.defaultJobs,
        limits: ImageLimits = .default
    ) -> AsyncStream<BarcodeScanResult> {
        ImageBatch.process(count: inputs.count, jobs: jobs) { index in
            let input = inputs[index]
            do throws(ImageError) {
                let image = try input.decode(limits: limits)
                return BarcodeScanResult(
                    name: input.name,
                    index: index,
                    barcodes: self.scan(image),
                    error: nil
                )
            } catch {
                return BarcodeScanResult(name: input.name, index: index, barcodes: [], error: error)
            }
        }
    }

    /// Scans files on up to `jobs` threads; results arrive in input order.
    public func scan(files: [URL], jobs: Int = ImageBatch.defaultJobs) -> AsyncStream<
        BarcodeScanResult
    > {
        scan(files.map(ScanInput.file), jobs: jobs)
    }
}
