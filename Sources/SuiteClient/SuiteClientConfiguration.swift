public import Foundation
public import Models

/// How a ``SuiteClient`` is set up: which app it serves, which server, the suite's timeouts.
public struct SuiteClientConfiguration: Sendable {
    /// The app's name as the server knows it (`reservations`, `catalog`); sent to
    /// `/v1/config/client` and used for the cache directory.
    public var appName: String
    /// The app's version (the suite's version); compared with the minimum client version.
    public var appVersion: SemanticVersion
    /// The `--server` option, if given.
    public var serverOption: String?
    /// How long to wait for a TCP connection to the server (2 s, `--connect-timeout`).
    public var connectTimeout: Duration
    /// The whole command's deadline, retries and refresh included (30 s, `--deadline`).
    public var deadline: Duration
    /// The suite (app group); nil: `SHOPFLOOR_SUITE`, else `shopfloor`.
    public var suite: String?
    /// The containers' root; nil: `SHOPFLOOR_HOME`, else the XDG default.
    public var root: URL?
    /// The environment (`SHOPFLOOR_SERVER`, proxies).
    public var environment: [String: String]

    /// A configuration with the suite's defaults.
    public init(
        appName: String,
        appVersion: SemanticVersion,
        serverOption: String? = nil,
        connectTimeout: Duration = .seconds(2),
        deadline: Duration = .seconds(30),
        suite: String? = nil,
        root: URL? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.appName = appName
        self.appVersion = appVersion
        self.serverOption = serverOption
        self.connectTimeout = connectTimeout
        self.deadline = deadline
        self.suite = suite
        self.root = root
        self.environment = environment
    }
}

/// Where a ``Fetched`` value came from.
public enum FetchOrigin: Sendable, Hashable {
    /// Fresh from the server.
    case server
    /// The same request's answer saved for offline use: when it was fetched, and why the
    /// server was not used.
    case cache(fetchedAt: Date, reason: String)
    /// Not an answer the server gave to this request: a partial list put together from
    /// what was kept of other answers (``KeptData``), and why the server was not used.
    case kept(KeptData, reason: String)
}

/// What a partial offline list was made from: how many kept entries matched, and the time
/// span they were fetched in. The server may hold more (or other) entries.
public struct KeptData: Sendable, Hashable {
    /// Entries that matched the query.
    public var count: Int
    /// When the oldest of them was fetched.
    public var oldest: Date
    /// When the newest of them was fetched.
    public var newest: Date

    /// Creates a description.
    public init(count: Int, oldest: Date, newest: Date) {
        self.count = count
        self.oldest = oldest
        self.newest = newest
    }
}

/// A value from the server, or from the offline cache when the server could not be reached.
public struct Fetched<Value: Sendable>: Sendable {
    /// Where the value came from.
    public typealias Origin = FetchOrigin

    /// The value.
    public var value: Value
    /// Where it came from.
    public var origin: Origin
    /// The response's `ETag`, when there was one.
    public var etag: String?

    /// Creates a fetched value.
    public init(value: Value, origin: Origin, etag: String? = nil) {
        self.value = value
        self.origin = origin
        self.etag = etag
    }

    /// True when the value came from the offline cache.
    public var isFromCache: Bool {
        switch origin {
        case .server: false
        case .cache, .kept: true
        }
    }

    /// The same origin and tag with another value.
    public func map<Other: Sendable>(_ transform: (Value) throws -> Other) rethrows -> Fetched<
        Other
    > {
        Fetched<Other>(value: try transform(value), origin: origin, etag: etag)
    }
}

/// A response of the server to a write.
public struct WriteResponse<Value: Sendable>: Sendable {
    /// The decoded body.
    public var value: Value
    /// The HTTP status (200, 201).
    public var status: Int
    /// The `ETag`, when there was one.
    public var etag: String?
    /// True when the server answered from its idempotency record (`Idempotency-Replayed`):
    /// this write had already been applied by an earlier attempt.
    public var replayed: Bool
}
