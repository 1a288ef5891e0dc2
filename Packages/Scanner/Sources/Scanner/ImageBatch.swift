public import Foundation
internal import Synchronization

/// Bounded-parallel processing of many inputs, with results delivered in input order.
///
/// The work runs on `jobs` dedicated threads, not on Swift's cooperative pool, because
/// decoding and scanning are long, blocking C calls. Results are yielded in input order as
/// soon as every earlier one is done. Ending the consumer's iteration stops the workers
/// after the inputs they are on.
public enum ImageBatch {
    /// The number of cores available to this process: the default width.
    public static var defaultJobs: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// Runs `work(index)` for `0..<count` on up to `jobs` threads; yields the results in order.
    public static func process<T: Sendable>(
        count: Int,
        jobs: Int = defaultJobs,
        _ work: @escaping @Sendable (Int) -> T
    ) -> AsyncStream<T> {
        AsyncStream { continuation in
            let state = BatchState<T>(count: count, continuation: continuation)
            continuation.onTermination = { _ in state.cancel() }
            let width = max(1, min(jobs, count))
            guard count > 0 else {
                continuation.finish()
                return
            }
            for _ in 0..<width {
                let thread = Thread {
                    while let index = state.take() {
                        state.deliver(index, work(index))
                    }
                    state.workerFinished()
                }
                // ZXing and leptonica recurse on some images; give them a main-thread-sized stack.
                thread.stackSize = 8 << 20
                thread.start()
            }
            state.setWorkers(width)
        }
    }
}

/// Shared between the batch's worker threads; every field is behind the mutex.
private final class BatchState<T: Sendable>: Sendable {
    private struct Inner {
        var next = 0
        var emitted = 0
        var pending: [Int: T] = [:]
        var cancelled = false
        var workers = 0
        var finishedWorkers = 0
        var workersKnown = false
    }

    private let count: Int
    private let continuation: AsyncStream<T>.Continuation
    private let inner = Mutex(Inner())

    init(count: Int, continuation: AsyncStream<T>.Continuation) {
        self.count = count
        self.continuation = continuation
    }

    func take() -> Int? {
        inner.withLock { s in
            guard !s.cancelled, s.next < count else { return nil }
            defer { s.next += 1 }
            return s.next
        }
    }

    func deliver(_ index: Int, _ value: T) {
        let complete = inner.withLock { s -> Bool in
            s.pending[index] = value
            // Yield under the lock so that results leave in input order.
            while let ready = s.pending.removeValue(forKey: s.emitted) {
                continuation.yield(ready)
                s.emitted += 1
            }
            return s.emitted == count
        }
        // Outside the lock: finishing runs onTermination, which takes the lock.
        if complete { continuation.finish() }
    }

    func cancel() {
        inner.withLock { $0.cancelled = true }
    }

    func setWorkers(_ n: Int) {
        let done = inner.withLock { s -> Bool in
            s.workers = n
            s.workersKnown = true
            return s.finishedWorkers == n
        }
        if done { continuation.finish() }
    }

    func workerFinished() {
        let done = inner.withLock { s -> Bool in
            s.finishedWorkers += 1
            return s.workersKnown && s.finishedWorkers == s.workers
        }
        if done { continuation.finish() }
    }
}

/// One input of a batch scan.
public struct ScanInput: Sendable {
    /// Where the image comes from.
    public enum Source: Sendable {
        /// A file to read and decode.
        case file(URL)
        /// Encoded image bytes (stdin, a network body, ...).
        case data(Data)
        /// Pixels already decoded.
        case image(ImageBuffer)
    }

    /// How results and errors name this input (the path as given, `-` for stdin, ...).
    public var name: String
    /// The image.
    public var source: Source

    /// Creates an input.
    public init(name: String, source: Source) {
        self.name = name
        self.source = source
    }

    /// A file input named by its path.
    public static func file(_ url: URL) -> ScanInput {
        ScanInput(name: url.path, source: .file(url))
    }

    /// Decodes this input into pixels.
    /// - Throws: ``ImageError`` naming this input.
    public func decode(limits: ImageLimits = .default) throws(ImageError) -> ImageBuffer {
        switch source {
        case .file(let url):
            let data: Data
            do {
                data = try ImageBuffer.readFile(url)
            } catch {
                throw ImageError(
                    code: error.code,
                    input: name,
                    message: error.message,
                    cause: error.cause
                )
            }
            return try ImageBuffer(data: data, name: name, limits: limits)
        case .data(let data):
            return try ImageBuffer(data: data, name: name, limits: limits)
        case .image(let image):
            return image
        }
    }
}

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
