public import Foundation
public import Logging
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

/// Loads images through a memory cache, a disk cache and a transport.
///
/// - Concurrent requests for one URL share one download and one decode; a request that is
///   cancelled leaves (getting ``ImageCacheError/Code/cancelled``) and the download is
///   cancelled only when every requester has left.
/// - At most ``Configuration/maximumConcurrentDownloads`` downloads run at once; waiting ones
///   start by priority (raised when a more urgent requester joins).
/// - HTTP caching: fresh copies are served without network, stale ones are revalidated with
///   `If-None-Match`/`If-Modified-Since` (a 304 keeps the copy and restarts its freshness),
///   and when the transport fails a stale copy is served marked ``ImageResponse/isStale``,
///   unless the response said `no-cache` or `must-revalidate`.
/// - Decoding is pluggable (``ImageDecoding``); the decoder's cost is the memory cost.
public final class ImagePipeline<Image: Sendable>: Sendable {
    /// Settings.
    public struct Configuration: Sendable {
        /// The memory cache's limit, in decoder cost (bytes for pixel buffers).
        public var memoryCostLimit: Int
        /// Downloads running at once.
        public var maximumConcurrentDownloads: Int
        /// Whether the cache is shared by several users (then `private` responses are not
        /// stored and `s-maxage` applies). The suite's caches belong to one user.
        public var isSharedCache: Bool
        /// The clock for freshness (tests move it forward instead of sleeping).
        public var clock: @Sendable () -> Date

        /// Creates settings.
        public init(
            memoryCostLimit: Int = 128 << 20,
            maximumConcurrentDownloads: Int = 6,
            isSharedCache: Bool = false,
            clock: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.memoryCostLimit = memoryCostLimit
            self.maximumConcurrentDownloads = maximumConcurrentDownloads
            self.isSharedCache = isSharedCache
            self.clock = clock
        }
    }

    /// Counts over the pipeline's life.
    public struct Statistics: Sendable, Equatable {
        /// The memory cache's counters.
        public var memory: MemoryCache<CachedImage<Image>>.Statistics
        /// Requests sent to the transport (downloads and revalidations).
        public var transportRequests: Int
        /// Images decoded.
        public var decodes: Int
    }

    /// The memory cache of decoded images.
    public let memoryCache: MemoryCache<CachedImage<Image>>
    /// The disk cache of the bytes, if any.
    public let diskCache: DiskCache?
    /// The settings.
    public let configuration: Configuration

    private let transport: any ImageTransport
    private let decoder: any ImageDecoding<Image>
    private let imageJobs = TaskCoalescer<JobKey, ImageResponse<Image>>()
    private let dataJobs = TaskCoalescer<JobKey, DataResponse>()
    private let downloads: DownloadQueue
    private let prefetches = Mutex<[CacheKey: Task<Void, Never>]>([:])
    private let counters = Mutex<(transportRequests: Int, decodes: Int)>((0, 0))
    private let logger: Logger

    private struct JobKey: Hashable, Sendable {
        var key: CacheKey
        var policy: ImageRequest.CachePolicy
    }

    /// Creates a pipeline.
    ///
    /// - Parameters:
    ///   - transport: sends requests (the apps pass Auth's signed client).
    ///   - decoder: turns bytes into `Image`.
    ///   - diskCache: the shared disk cache, or nil for memory only.
    ///   - configuration: limits and clock.
    ///   - logger: downloads at debug level, cache trouble as warnings; no header values.
    public init(
        transport: some ImageTransport,
        decoder: some ImageDecoding<Image>,
        diskCache: DiskCache?,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "shopfloor.image-pipeline")
    ) {
        self.transport = transport
        self.decoder = decoder
        self.diskCache = diskCache
        self.configuration = configuration
        self.logger = logger
        memoryCache = MemoryCache(costLimit: max(1, configuration.memoryCostLimit))
        downloads = DownloadQueue(limit: configuration.maximumConcurrentDownloads)
    }

    /// Creates a pipeline with a disk cache in `directory` (for example `images` in the
    /// suite container).
    ///
    /// - Throws: ``ImageCacheError`` when the folder cannot be used.
    public convenience init(
        directory: URL,
        diskSizeLimit: Int,
        transport: some ImageTransport,
        decoder: some ImageDecoding<Image>,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "shopfloor.image-pipeline")
    ) throws(ImageCacheError) {
        let disk = try DiskCache(directory: directory, sizeLimit: diskSizeLimit, logger: logger)
        self.init(
            transport: transport,
            decoder: decoder,
            diskCache: disk,
            configuration: configuration,
            logger: logger
        )
    }

    // MARK: Loading

    /// Loads the image for `request`.
    ///
    /// A fresh image in memory is returned without suspending (see ``cachedResponse(for:)``).
    /// - Throws: ``ImageCacheError``: `transportFailed` (and nothing usable cached),
    ///   `httpStatus`, `notCached`, `decodingFailed`, `invalidResponse`, `cancelled`.
    @inlinable
    public func image(for request: ImageRequest) async throws(ImageCacheError) -> ImageResponse<
        Image
    > {
        if let response = cachedResponse(for: request) { return response }
        return try await loadImage(request)
    }

    /// The image for `request` from memory, synchronously, when the request may use it: a
    /// fresh copy, or any copy when the request's policy accepts stale data; nil otherwise.
    ///
    /// Inlined into the caller, so it runs as code specialized for the app's image type.
    @inlinable
    public func cachedResponse(for request: ImageRequest) -> ImageResponse<Image>? {
        guard request.cachePolicy != .reloadIgnoringCacheData,
            let cached = memoryCache.value(forKey: request.key)
        else { return nil }
        let fresh = cached.metadata?.isFresh(at: configuration.clock()) ?? true
        guard fresh || request.cachePolicy != .useProtocolCachePolicy else { return nil }
        return ImageResponse(
            image: cached.image,
            source: .memory,
            isStale: !fresh,
            staleReason: nil,
            metadata: cached.metadata
        )
    }

    /// The image for `request` through the coalesced jobs (disk, network, decode).
    @usableFromInline
    func loadImage(_ request: ImageRequest) async throws(ImageCacheError) -> ImageResponse<Image> {
        if Task.isCancelled { throw .cancelled(request.url.absoluteString) }
        let subscription = imageJobs.subscribe(
            JobKey(key: request.key, policy: request.cachePolicy),
            priority: request.priority,
            label: request.url.absoluteString
        ) { [self] job throws(ImageCacheError) in
            try await loadImage(request, job: job)
        }
        return try await subscription.value()
    }

    /// Loads the bytes for `request` as the server sent them, through the disk cache (not
    /// the memory cache). Shares the download with image requests for the same URL.
    ///
    /// - Throws: as ``image(for:)``, except `decodingFailed`.
    public func data(for request: ImageRequest) async throws(ImageCacheError) -> DataResponse {
        if Task.isCancelled { throw .cancelled(request.url.absoluteString) }
        return try await dataSubscription(request, priority: request.priority).value()
    }

    /// The decoded image held in memory for `url`, fresh or not, without loading anything.
    public func cachedImage(for url: URL) -> Image? {
        memoryCache.value(forKey: CacheKey(url: url))?.image
    }

    private func dataSubscription(_ request: ImageRequest, priority: ImageRequest.Priority)
        -> Subscription<DataResponse>
    {
        dataJobs.subscribe(
            JobKey(key: request.key, policy: request.cachePolicy),
            priority: priority,
            label: request.url.absoluteString
        ) { [self] job throws(ImageCacheError) in
            try await loadData(request, job: job)
        }
    }

    private func loadImage(_ request: ImageRequest, job: CoalescedJob<ImageResponse<Image>>)
        async throws(ImageCacheError) -> ImageResponse<Image>
    {
        let subscription = dataSubscription(request, priority: job.priority)
        job.onPriorityChange { subscription.setPriority($0) }
        let response = try await subscription.value()
        let contentHash = response.data.withUnsafeBytes { XXHash64.hash($0) }
        let image: Image
        // A revalidated copy still held in memory needs no second decode.
        if let held = memoryCache.value(forKey: request.key), held.contentHash == contentHash,
            held.byteCount == response.data.count
        {
            image = held.image
        } else {
            do {
                image = try decoder.decode(response.data, url: request.url)
                counters.withLock { $0.decodes += 1 }
            } catch {
                if response.source != .network {
                    // Bytes the cache kept but nobody can decode: forget them.
                    try? diskCache?.removeEntry(forKey: request.key)
                }
                throw ImageCacheError(
                    code: .decodingFailed,
                    message: "cannot decode the image from \(request.url.absoluteString)",
                    url: request.url.absoluteString,
                    cause: error
                )
            }
        }
        if response.metadata?.isStorable(isSharedCache: configuration.isSharedCache) ?? true {
            memoryCache.setValue(
                CachedImage(
                    image: image,
                    metadata: response.metadata,
                    contentHash: contentHash,
                    byteCount: response.data.count
                ),
                forKey: request.key,
                cost: decoder.cost(of: image, data: response.data)
            )
        } else {
            memoryCache.removeValue(forKey: request.key)
        }
        return ImageResponse(
            image: image,
            source: response.source,
            isStale: response.isStale,
            staleReason: response.staleReason,
            metadata: response.metadata
        )
    }

    private func loadData(_ request: ImageRequest, job: CoalescedJob<DataResponse>)
        async throws(ImageCacheError) -> DataResponse
    {
        let url = request.url.absoluteString
        let policy = request.cachePolicy
        let shared = configuration.isSharedCache
        var stale: (metadata: HTTPCacheMetadata, body: Data)?
        if policy != .reloadIgnoringCacheData, let diskCache,
            let entry = diskCache.entry(forKey: request.key)
        {
            if let metadata = HTTPCacheMetadata(encoded: entry.metadata, isSharedCache: shared) {
                let fresh = metadata.isFresh(at: configuration.clock())
                if fresh || policy != .useProtocolCachePolicy {
                    return DataResponse(
                        data: entry.body,
                        source: .disk,
                        isStale: !fresh,
                        staleReason: nil,
                        metadata: metadata
                    )
                }
                stale = (metadata, entry.body)
            } else {
                logger.warning(
                    "dropping a cached image with unreadable metadata",
                    metadata: ["url": "\(url)"]
                )
                try? diskCache.removeEntry(forKey: request.key)
            }
        }
        if policy == .returnCacheDataDontLoad {
            throw ImageCacheError(code: .notCached, message: "\(url) is not cached", url: url)
        }

        // The network, in priority order.
        let ticket = downloads.makeTicket(priority: job.priority)
        job.onPriorityChange { [downloads] in downloads.setPriority(ticket, $0) }
        guard await downloads.wait(ticket) else { throw .cancelled(url) }
        defer { downloads.release() }

        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = "GET"
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        for (name, value) in request.headers {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if let stale {
            for (name, value) in stale.metadata.validatorHeaders {
                urlRequest.setValue(value, forHTTPHeaderField: name)
            }
        }
        counters.withLock { $0.transportRequests += 1 }
        logger.debug(
            "loading an image",
            metadata: ["url": "\(url)", "conditional": "\(stale != nil)"]
        )
        let data: Data
        let response: HTTPURLResponse
        do {
            (data, response) = try await transport.send(urlRequest)
        } catch {
            if Task.isCancelled || error is CancellationError { throw .cancelled(url) }
            let failure = ImageCacheError(
                code: .transportFailed,
                message: "cannot load \(url)",
                url: url,
                cause: error
            )
            return try serveStale(stale, url: url, because: failure)
        }
        if Task.isCancelled { throw .cancelled(url) }
        let responseTime = configuration.clock()
        switch response.statusCode {
        case 304:
            guard let stale else {
                throw ImageCacheError(
                    code: .invalidResponse,
                    message:
                        "the server answered 304 Not Modified to an unconditional request for \(url)",
                    url: url,
                    status: 304
                )
            }
            let metadata = stale.metadata.updated(
                with: response,
                responseTime: responseTime,
                isSharedCache: shared
            )
            let failure = store(stale.body, metadata: metadata, key: request.key)
            return DataResponse(
                data: stale.body,
                source: .revalidated,
                isStale: false,
                staleReason: nil,
                metadata: metadata,
                storeFailure: failure
            )
        case 200:
            let metadata = HTTPCacheMetadata(
                response: response,
                responseTime: responseTime,
                isSharedCache: shared
            )
            var failure: ImageCacheError?
            if metadata.isStorable(isSharedCache: shared) {
                failure = store(data, metadata: metadata, key: request.key)
            } else if stale != nil {
                try? diskCache?.removeEntry(forKey: request.key)
            }
            return DataResponse(
                data: data,
                source: .network,
                isStale: false,
                staleReason: nil,
                metadata: metadata,
                storeFailure: failure
            )
        case 408, 429, 500...599:
            // The server cannot answer now: like being offline (RFC 5861's stale-if-error).
            let failure = ImageCacheError(
                code: .httpStatus,
                message: "the server answered \(response.statusCode) for \(url)",
                url: url,
                status: response.statusCode
            )
            return try serveStale(stale, url: url, because: failure)
        default:
            throw ImageCacheError(
                code: .httpStatus,
                message: "the server answered \(response.statusCode) for \(url)",
                url: url,
                status: response.statusCode
            )
        }
    }

    private func serveStale(
        _ stale: (metadata: HTTPCacheMetadata, body: Data)?,
        url: String,
        because failure: ImageCacheError
    ) throws(ImageCacheError) -> DataResponse {
        guard let stale else { throw failure }
        guard stale.metadata.mayServeStale else {
            var refused = failure
            refused.message +=
                "; the cached copy is stale and its response forbids serving it unrevalidated (no-cache or must-revalidate)"
            throw refused
        }
        logger.info(
            "serving a stale image",
            metadata: ["url": "\(url)", "reason": "\(failure.message)"]
        )
        return DataResponse(
            data: stale.body,
            source: .disk,
            isStale: true,
            staleReason: failure,
            metadata: stale.metadata
        )
    }

    /// Stores an answer on disk; returns why it could not be (nil: stored, or no disk cache).
    private func store(_ body: Data, metadata: HTTPCacheMetadata, key: CacheKey)
        -> ImageCacheError?
    {
        guard let diskCache else { return nil }
        do {
            try diskCache.store(body, metadata: metadata.encoded(), forKey: key)
            return nil
        } catch {
            let level: Logger.Level = error.code == .entryTooLarge ? .debug : .warning
            logger.log(
                level: level,
                "cannot store an image on disk",
                metadata: ["url": "\(key)", "error": "\(error)"]
            )
            return error
        }
    }

    // MARK: Prefetching

    /// Starts loading `requests` into the disk cache at low priority (at most the request's
    /// own), without waiting. A later ``image(for:)`` joins a prefetch in flight.
    public func startPrefetching(_ requests: [ImageRequest]) {
        for original in requests {
            var lowered = original
            lowered.priority = min(original.priority, .low)
            let request = lowered
            let key = request.key
            prefetches.withLock { tasks in
                guard tasks[key] == nil else { return }
                tasks[key] = Task(priority: .utility) { [self] in
                    _ = try? await data(for: request)
                    _ = prefetches.withLock { $0.removeValue(forKey: key) }
                }
            }
        }
    }

    /// Stops prefetching `requests`; their downloads stop unless someone else waits for them.
    public func stopPrefetching(_ requests: [ImageRequest]) {
        let tasks = prefetches.withLock { tasks in
            requests.compactMap { tasks.removeValue(forKey: $0.key) }
        }
        for task in tasks { task.cancel() }
    }

    /// Stops every prefetch.
    public func stopAllPrefetching() {
        let tasks = prefetches.withLock { tasks in
            let all = Array(tasks.values)
            tasks.removeAll()
            return all
        }
        for task in tasks { task.cancel() }
    }

    /// What ``prefetch(_:maximumConcurrent:progress:)`` did.
    public struct PrefetchSummary: Sendable {
        /// Requests already fresh in the disk cache (no network).
        public var alreadyCached = 0
        /// Requests downloaded or revalidated.
        public var loaded = 0
        /// Requests that failed, with their errors.
        public var failures: [(url: URL, error: ImageCacheError)] = []
    }

    /// Loads `requests` into the disk cache, `maximumConcurrent` at a time at low priority,
    /// calling `progress` with (done, total) after each; returns when all are done (or the
    /// task is cancelled). Running it again after an interruption skips what is cached.
    public func prefetch(
        _ requests: [ImageRequest],
        maximumConcurrent: Int = 4,
        progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
    ) async -> PrefetchSummary {
        var summary = PrefetchSummary()
        let total = requests.count
        var done = 0
        await withTaskGroup(of: (URL, Result<DataResponse, ImageCacheError>).self) { group in
            var pending = requests.makeIterator()
            func addNext() -> Bool {
                guard var request = pending.next() else { return false }
                request.priority = min(request.priority, .low)
                group.addTask { [self] in
                    do throws(ImageCacheError) {
                        return (request.url, .success(try await data(for: request)))
                    } catch {
                        return (request.url, .failure(error))
                    }
                }
                return true
            }
            for _ in 0..<max(1, maximumConcurrent) where !addNext() { break }
            while let (url, result) = await group.next() {
                done += 1
                switch result {
                case .success(let response):
                    if let failure = response.storeFailure {
                        // Loaded but not kept: the work a prefetch exists for was not done.
                        summary.failures.append((url, failure))
                    } else if response.source == .disk && !response.isStale {
                        summary.alreadyCached += 1
                    } else if response.isStale {
                        summary.failures.append(
                            (url, response.staleReason ?? .cancelled(url.absoluteString))
                        )
                    } else {
                        summary.loaded += 1
                    }
                case .failure(let error):
                    summary.failures.append((url, error))
                }
                progress?(done, total)
                if !Task.isCancelled { _ = addNext() }
            }
        }
        return summary
    }

    // MARK: Removing and counting

    /// Removes the cached copies of `url` from memory and disk.
    public func removeCachedImage(for url: URL) throws(ImageCacheError) {
        let key = CacheKey(url: url)
        memoryCache.removeValue(forKey: key)
        try diskCache?.removeEntry(forKey: key)
    }

    /// Empties the memory and disk caches.
    public func removeAllCachedImages() throws(ImageCacheError) {
        memoryCache.removeAll()
        try diskCache?.removeAll()
    }

    /// Downloads waiting for a slot (for tests).
    var queuedDownloads: Int { downloads.waiting }

    /// The priority of the download job for `request`, while it runs (for tests).
    func downloadPriority(for request: ImageRequest) -> ImageRequest.Priority? {
        dataJobs.priority(of: JobKey(key: request.key, policy: request.cachePolicy))
    }

    /// Counts over the pipeline's life.
    public var statistics: Statistics {
        let (requests, decodes) = counters.withLock { ($0.transportRequests, $0.decodes) }
        return Statistics(
            memory: memoryCache.statistics,
            transportRequests: requests,
            decodes: decodes
        )
    }
}

/// A decoded image in the memory cache, with the caching facts of its bytes.
public struct CachedImage<Image: Sendable>: Sendable {
    /// The image.
    public var image: Image
    /// The HTTP caching facts, when known.
    public var metadata: HTTPCacheMetadata?
    /// XXH64 of the encoded bytes, so a revalidated copy is not decoded again.
    var contentHash: UInt64
    /// The encoded byte count.
    var byteCount: Int
}
