public import Foundation
public import ImageCache
public import Logging
public import PNG
public import SuiteClient
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

/// The suite's product images: an ``ImagePipeline`` whose disk cache lives in the suite
/// container (`<container>/images`, shared by every suite tool and process) and whose
/// requests go through ``SuiteClient/send(_:signed:)``: signed through Auth, bounded by the
/// connect probe and the command's deadline. Images on other servers are fetched unsigned,
/// so credentials never leave the suite's server.
///
/// Opening costs one `open` of the cache's index (no folder scan); nothing is loaded before
/// the first request. Failures come out as ``SuiteClientError``s, so apps map them to the
/// suite's exit codes like any other request (6 offline with nothing cached, 3 no image, 77
/// sign-in required, ...).
public final class ProductImageCache: Sendable {
    /// The disk cache's byte limit, shared by every process using the folder (256 MiB).
    public static let diskSizeLimit = 256 << 20

    /// The pipeline (memory cache of decoded images, disk cache, coalesced downloads).
    public let pipeline: ImagePipeline<PNGImage>
    /// The shared disk cache.
    public let diskCache: DiskCache
    /// The cache folder.
    public let directory: URL
    private let client: SuiteClient
    private let gate = DownloadGate()

    /// The image cache folder in a suite container.
    public static func directory(in container: URL) -> URL {
        SuiteClient.imageDirectory(in: container)
    }

    /// Opens the cache in `client`'s suite container.
    ///
    /// - Parameters:
    ///   - clock: the clock for HTTP freshness (tests move it past `max-age`).
    ///   - maximumConcurrentDownloads: downloads at once.
    /// - Throws: ``SuiteClientError`` `storage` when the folder cannot be used.
    public init(
        client: SuiteClient,
        clock: @escaping @Sendable () -> Date = { Date() },
        maximumConcurrentDownloads: Int = 6,
        logger: Logger
    ) throws(SuiteClientError) {
        self.client = client
        directory = Self.directory(in: client.container)
        let origin = client.server.origin
        let userAgent = "\(client.configuration.appName)/\(client.configuration.appVersion)"
        let gate = self.gate
        let transport = ClosureTransport { original in
            var request = original
            if request.value(forHTTPHeaderField: "Accept") == nil {
                request.setValue("image/png, image/*;q=0.8", forHTTPHeaderField: "Accept")
            }
            request.setValue(userAgent, forHTTPHeaderField: "User-Agent")
            let sameServer = request.url.map { Self.origin(of: $0) == origin } ?? false
            let ready = request
            return try await gate.run { try await client.send(ready, signed: sameServer) }
        }
        let decoder = ImageDecoder<PNGImage>(
            decode: { data, url in try PNGImage(decoding: data, name: url.absoluteString) },
            cost: { image, _ in image.rgba.count }
        )
        do {
            diskCache = try DiskCache(
                directory: directory,
                sizeLimit: Self.diskSizeLimit,
                logger: logger
            )
        } catch {
            throw Self.map(error, what: "the image cache")
        }
        pipeline = ImagePipeline(
            transport: transport,
            decoder: decoder,
            diskCache: diskCache,
            configuration: ImagePipeline<PNGImage>.Configuration(
                memoryCostLimit: 64 << 20,
                maximumConcurrentDownloads: maximumConcurrentDownloads,
                clock: clock
            ),
            logger: logger
        )
    }

    /// `scheme://host:port`, as ``ServerEndpoint/origin`` writes it.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }

    /// The decoded image at `url` (memory, disk, or the server; stale when offline).
    public func image(at url: URL, what: String) async throws(SuiteClientError) -> ImageResponse<
        PNGImage
    > {
        do {
            return try await pipeline.image(for: ImageRequest(url: url, priority: .high))
        } catch {
            throw Self.map(error, what: what)
        }
    }

    /// The image's bytes as the server sent them.
    public func data(at url: URL, what: String) async throws(SuiteClientError) -> DataResponse {
        do {
            return try await pipeline.data(for: ImageRequest(url: url, priority: .high))
        } catch {
            throw Self.map(error, what: what)
        }
    }

    /// Abandons every download: those in flight are cancelled and their answers, even ones
    /// that arrive, are not stored; later ones fail at once. Writes to the disk cache already
    /// under way finish, so callers of ``image(at:what:)`` and ``data(at:what:)`` return
    /// (with `cancelled`) only once nothing is being written: a stopping command calls this
    /// instead of cancelling its callers, which would return while a shared job still writes.
    public func abandonDownloads() {
        gate.close()
    }

    /// Runs `body` so that cancelling the calling task (a stop signal) stops it cleanly:
    /// `onStop` is called (so `body` can stop starting work), then ``abandonDownloads()``,
    /// and `body` is waited for (it is not cancelled itself), so it returns once every write
    /// in progress has finished. `body` sees the abandoned loads fail with `cancelled`.
    public func stoppable<Value: Sendable>(
        onStop: @escaping @Sendable () -> Void = {},
        _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let work = Task { try await body() }
        return try await withTaskCancellationHandler {
            try await work.value
        } onCancel: {
            onStop()
            abandonDownloads()
        }
    }

    /// Writes the last-use times of this run's cache hits to the shared index (they steer
    /// eviction), so a command's reads count before it exits.
    public func recordUse() {
        try? diskCache.flushAccessTimes()
    }

    /// What the disk cache holds.
    public func statistics() throws(SuiteClientError) -> DiskCache.Statistics {
        do {
            return try diskCache.statistics()
        } catch {
            throw Self.map(error, what: "the image cache")
        }
    }

    /// Empties the memory and disk caches (for every suite tool).
    public func removeAll() throws(SuiteClientError) {
        do {
            try pipeline.removeAllCachedImages()
        } catch {
            throw Self.map(error, what: "the image cache")
        }
    }

    /// An ImageCache failure as the suite's error: a transport failure keeps the client's
    /// own error (offline, sign-in required, ...) with what was asked for named.
    public static func map(_ error: ImageCacheError, what: String) -> SuiteClientError {
        switch error.code {
        case .transportFailed:
            if let cause = error.cause as? SuiteClientError {
                var mapped = cause
                if cause.code == .offline {
                    mapped.message = "offline: \(cause.message); no copy of \(what) was kept"
                }
                return mapped
            }
            return SuiteClientError(
                .offline,
                "offline: cannot load \(what): \(error.description)",
                cause: error
            )
        case .notCached:
            return SuiteClientError(.offline, "\(what) is not cached", cause: error)
        case .httpStatus:
            let status = error.status ?? 0
            let code: SuiteClientError.Code
            switch status {
            case 404: code = .notFound
            case 401, 403: code = .signInRequired
            case 400, 413, 414: code = .invalidInput
            case 502, 503, 504: code = .offline
            default: code = .server
            }
            let message =
                status == 404
                ? "the server has no \(what)"
                : "the server answered \(status) for \(what)"
            return SuiteClientError(code, message, status: status, cause: error)
        case .decodingFailed:
            let reason = error.cause.map { "\($0)" } ?? error.message
            return SuiteClientError(
                .server,
                "\(what) could not be decoded: \(reason)",
                cause: error
            )
        case .invalidResponse:
            return SuiteClientError(.server, "\(error.message) (\(what))", cause: error)
        case .cancelled:
            return SuiteClientError(.cancelled, "loading \(what) was cancelled", cause: error)
        case .ioFailure, .invalidConfiguration, .entryTooLarge, .cacheBusy:
            return SuiteClientError(.storage, error.description, cause: error)
        }
    }
}

/// The downloads of one cache: each runs as its own task so that ``close()`` can cancel it
/// without cancelling the pipeline job waiting for it (that job then stores nothing and
/// ends, delivering `cancelled` to its callers).
final class DownloadGate: Sendable {
    private struct State {
        var closed = false
        var running: [Int: Task<(Data, HTTPURLResponse), any Error>] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    /// Runs `send` unless the gate is closed; throws `CancellationError` when it is, or when
    /// it closes before the answer is handed back.
    func run(
        _ send: @escaping @Sendable () async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        let started = state.withLock { state -> (Int, Task<(Data, HTTPURLResponse), any Error>)? in
            guard !state.closed else { return nil }
            let id = state.next
            state.next += 1
            let task = Task { try await send() }
            state.running[id] = task
            return (id, task)
        }
        guard let (id, task) = started else { throw CancellationError() }
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        let closed = state.withLock { state -> Bool in
            state.running[id] = nil
            return state.closed
        }
        if closed { throw CancellationError() }
        return try result.get()
    }

    /// Cancels the downloads in flight and refuses new ones.
    func close() {
        let tasks = state.withLock { state -> [Task<(Data, HTTPURLResponse), any Error>] in
            state.closed = true
            return Array(state.running.values)
        }
        for task in tasks { task.cancel() }
    }
}
