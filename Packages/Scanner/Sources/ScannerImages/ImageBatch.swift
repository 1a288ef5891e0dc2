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
    /// With a `throttle`, each item runs between its ``BatchThrottle/acquire()`` and
    /// ``BatchThrottle/release()``, so fewer than `jobs` may run at once while it says so.
    public static func process<T: Sendable>(
        count: Int,
        jobs: Int = defaultJobs,
        throttle: (any BatchThrottle)? = nil,
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
                    while true {
                        throttle?.acquire()
                        guard let index = state.take() else {
                            throttle?.release()
                            break
                        }
                        let result = work(index)
                        throttle?.release()
                        state.deliver(index, result)
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

/// What lets fewer of a batch's jobs run at once (under machine pressure, for example):
/// each worker thread calls ``acquire()`` before an item, waiting as long as it must, and
/// ``release()`` after it.
public protocol BatchThrottle: Sendable {
    /// Waits until one more item may run, and takes its place.
    func acquire()
    /// Gives back the place ``acquire()`` took.
    func release()
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
        /// Encoded image bytes (a network body, ...).
        case data(Data)
        /// Pixels already decoded.
        case image(ImageBuffer)
        /// The process's standard input, read when the input is decoded.
        case standardInput
        /// A file by the bytes of its path, for names that are not UTF-8 (which a `URL` on
        /// Linux cannot hold); directory walks use it for every file.
        case path([UInt8])
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

    /// Decodes this input's first frame into pixels.
    /// - Throws: ``ImageError`` naming this input.
    public func decode(limits: ImageLimits = .default) throws(ImageError) -> ImageBuffer {
        if case .image(let image) = source { return image }
        guard let first = try openFrames(limits: limits, budget: nil).next() else {
            throw ImageError(code: .corrupt, input: name, message: "the image holds no frame")
        }
        return first.image
    }

    /// Decodes every frame in turn (TIFF pages, GIF frames; one for other formats), calling
    /// `body` with each, or with the error that ended decoding (a bad input, a bad frame, or
    /// more frames than ``ImageLimits/maximumFrameCount``). Only one frame's pixels exist at
    /// a time; with a `budget`, the input's memory is reserved from it (waiting for room)
    /// before its body is read, and returned when this returns.
    public func forEachFrame(
        limits: ImageLimits = .default,
        budget: MemoryBudget? = nil,
        _ body: (Result<ImageFrame, ImageError>) -> Void
    ) {
        if case .image(let image) = source {
            body(.success(ImageFrame(index: 0, count: 1, image: image)))
            return
        }
        do throws(ImageError) {
            let frames = try openFrames(limits: limits, budget: budget)
            defer { frames.reservation?.release() }
            while let frame = try frames.next() { body(.success(frame)) }
        } catch {
            body(.failure(error))
        }
    }
}

/// Memory for decoding shared by a batch's jobs, so that `jobs` parallel decodes never
/// multiply the peak: each input reserves its bytes and an estimate of its largest frame's
/// peak (``estimate(pixels:)``) before its body is read, and waits, first come first served,
/// until that fits. An input larger than the whole budget runs alone.
public final class MemoryBudget: @unchecked Sendable {
    // Safe: every mutable field is read and written only while holding `condition`.
    /// The bytes that may be reserved at once.
    public let capacity: Int
    private let condition = NSCondition()
    private var inFlight = 0
    private var holders = 0
    private var nextTicket: UInt64 = 0
    private var serving: UInt64 = 0

    /// 1 GiB: with the process's own memory, a scan fits a machine with 2 GB.
    public static let defaultCapacity = 1 << 30

    /// The peak bytes one decoded pixel costs while it is scanned: the decoded pixels (up
    /// to 4 bytes), their grey view and the engines' working copies (measured: about 8).
    public static let bytesPerPixel = 8

    /// The bytes to reserve for a frame of `pixels` pixels.
    public static func estimate(pixels: Int) -> Int {
        let (bytes, overflow) = max(0, pixels).multipliedReportingOverflow(by: bytesPerPixel)
        return overflow ? Int.max / 2 : bytes
    }

    /// Creates a budget of `capacity` bytes (at least 1 MiB).
    public init(capacity: Int = MemoryBudget.defaultCapacity) {
        self.capacity = max(1 << 20, capacity)
    }

    /// Waits until `bytes` fit beside what is reserved (or nothing else is), in order of
    /// arrival, and reserves them until the reservation is released or freed.
    public func reserve(_ bytes: Int) -> MemoryReservation {
        let bytes = max(0, bytes)
        condition.lock()
        let ticket = nextTicket
        nextTicket += 1
        while ticket != serving || (holders > 0 && inFlight > capacity - min(bytes, capacity)) {
            condition.wait()
        }
        serving += 1
        inFlight += bytes
        holders += 1
        condition.broadcast()
        condition.unlock()
        return MemoryReservation(budget: self, bytes: bytes)
    }

    fileprivate func release(_ bytes: Int) {
        condition.lock()
        inFlight -= bytes
        holders -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// The bytes reserved now (for tests and diagnostics).
    public var reserved: Int {
        condition.lock()
        defer { condition.unlock() }
        return inFlight
    }
}

/// Bytes held from a ``MemoryBudget``; returned by ``release()`` or when freed.
public final class MemoryReservation: Sendable {
    private let budget: MemoryBudget
    private let bytes: Int
    private let released = Atomic<Bool>(false)

    fileprivate init(budget: MemoryBudget, bytes: Int) {
        self.budget = budget
        self.bytes = bytes
    }

    /// Returns the bytes to the budget; idempotent.
    public func release() {
        if !released.exchange(true, ordering: .acquiringAndReleasing) { budget.release(bytes) }
    }

    deinit { release() }
}
