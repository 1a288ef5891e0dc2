public import Foundation

/// Turns downloaded bytes into the app's image type, and says what it costs to keep.
///
/// The catalog app plugs in Scanner's `ImageBuffer`:
/// ```swift
/// struct ImageBufferDecoder: ImageDecoding {
///     func decode(_ data: Data, url: URL) throws -> ImageBuffer {
///         try ImageBuffer(data: data, name: url.absoluteString)
///     }
///     func cost(of image: ImageBuffer, data: Data) -> Int { image.pixels.count }
/// }
/// ```
public protocol ImageDecoding<Image>: Sendable {
    /// The decoded type.
    associatedtype Image: Sendable
    /// Decodes `data` loaded from `url`; throws for bytes that are not an image.
    func decode(_ data: Data, url: URL) throws -> Image
    /// The memory cache cost of keeping `image` (decoded from `data`), usually its bytes.
    func cost(of image: Image, data: Data) -> Int
}

/// Keeps the bytes as they are: the pipeline as a data cache.
public struct DataDecoder: ImageDecoding {
    /// Creates the decoder.
    public init() {}
    /// Returns `data`.
    public func decode(_ data: Data, url: URL) throws -> Data { data }
    /// The byte count.
    public func cost(of image: Data, data: Data) -> Int { data.count }
}

/// A decoder from closures.
public struct ImageDecoder<Image: Sendable>: ImageDecoding {
    private let decodeBody: @Sendable (Data, URL) throws -> Image
    private let costBody: @Sendable (Image, Data) -> Int

    /// Creates a decoder; `cost` defaults to the encoded byte count.
    public init(
        decode: @escaping @Sendable (Data, URL) throws -> Image,
        cost: @escaping @Sendable (Image, Data) -> Int = { _, data in data.count }
    ) {
        decodeBody = decode
        costBody = cost
    }

    /// Calls the decode closure.
    public func decode(_ data: Data, url: URL) throws -> Image { try decodeBody(data, url) }
    /// Calls the cost closure.
    public func cost(of image: Image, data: Data) -> Int { costBody(image, data) }
}

/// An image to load.
public struct ImageRequest: Sendable, Hashable {
    /// Which requests go first when downloads are limited.
    public enum Priority: Int, Sendable, Comparable, CaseIterable {
        /// Background work.
        case veryLow
        /// Prefetching.
        case low
        /// An image about to be shown.
        case normal
        /// An image being shown.
        case high
        /// An image the user waits for.
        case veryHigh

        /// Orders by urgency.
        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// How the caches are used.
    public enum CachePolicy: String, Sendable, Hashable, CaseIterable {
        /// HTTP rules: fresh copies without network, stale ones revalidated, stale ones
        /// served (marked stale) when the server cannot be reached and the response allows it.
        case useProtocolCachePolicy
        /// Any cached copy, fresh or stale (marked), without network; else load.
        case returnCacheDataElseLoad
        /// Only a cached copy (stale ones marked); else ``ImageCacheError/Code/notCached``.
        case returnCacheDataDontLoad
        /// Always load from the server (and store the answer).
        case reloadIgnoringCacheData
    }

    /// The image's URL.
    public var url: URL { didSet { key = CacheKey(url: url) } }
    /// Its priority.
    public var priority: Priority
    /// How the caches are used.
    public var cachePolicy: CachePolicy
    /// Extra request header fields (such as `Accept`); not part of the cache key.
    public var headers: [String: String]
    /// The cache key (the URL's absolute string, hashed once).
    public private(set) var key: CacheKey

    /// Creates a request.
    public init(
        url: URL,
        priority: Priority = .normal,
        cachePolicy: CachePolicy = .useProtocolCachePolicy,
        headers: [String: String] = [:]
    ) {
        self.url = url
        self.priority = priority
        self.cachePolicy = cachePolicy
        self.headers = headers
        key = CacheKey(url: url)
    }
}

/// Where a response's bytes came from.
public enum ImageSource: String, Sendable, Hashable {
    /// The memory cache (decoded image).
    case memory
    /// The disk cache, without asking the server.
    case disk
    /// A full download.
    case network
    /// The disk cache, confirmed by the server (`304 Not Modified`).
    case revalidated
}

/// A loaded image.
public struct ImageResponse<Image: Sendable>: Sendable {
    /// The image.
    public var image: Image
    /// Where it came from.
    public var source: ImageSource
    /// True when it is a stale copy served because it could not be revalidated (see
    /// ``staleReason``), or because the request allowed stale data.
    public var isStale: Bool
    /// Why a stale copy was served: the transport failure or server error; nil when fresh or
    /// when the request asked for cached data.
    public var staleReason: ImageCacheError?
    /// The HTTP caching facts of the copy, when known.
    public var metadata: HTTPCacheMetadata?

    @usableFromInline
    init(
        image: Image,
        source: ImageSource,
        isStale: Bool,
        staleReason: ImageCacheError?,
        metadata: HTTPCacheMetadata?
    ) {
        self.image = image
        self.source = source
        self.isStale = isStale
        self.staleReason = staleReason
        self.metadata = metadata
    }
}

/// Loaded bytes, as the server sent them (for saving the original file).
public struct DataResponse: Sendable {
    /// The bytes.
    public var data: Data
    /// Where they came from.
    public var source: ImageSource
    /// True when they are a stale copy (see ``ImageResponse/isStale``).
    public var isStale: Bool
    /// Why a stale copy was served.
    public var staleReason: ImageCacheError?
    /// The HTTP caching facts, when known.
    public var metadata: HTTPCacheMetadata?
    /// Why bytes fetched from the network could not be kept in the disk cache (a full disk,
    /// an image larger than the cache), or nil: stored, or no disk cache. The data is still
    /// returned; a prefetch counts such an image as failed.
    public var storeFailure: ImageCacheError? = nil
}
