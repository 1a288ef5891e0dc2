public import Auth
public import Foundation
public import Logging
public import Models
internal import Plumbing
internal import SharedDefaults
internal import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

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
    /// From the offline cache: when it was fetched, and why the server was not used.
    case cache(fetchedAt: Date, reason: String)
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
        if case .cache = origin { return true }
        return false
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

/// The suite's client for store-server, shared by every client app (`reservations`,
/// `catalog`): the server URL by the suite's precedence, signed requests through Auth's
/// `AuthClient`, the client configuration with its ETag and last good copy, the forced-update
/// check, the offline cache of last responses, and the suite's timeouts.
///
/// - **Timeouts.** A connect timeout (2 s) enforced by a TCP probe every request races (see
///   ``ConnectProbe``), and one deadline for the whole command (30 s) that every request
///   shares. Nothing shorter is hidden anywhere: a slow link that connects gets the whole
///   deadline.
/// - **Offline.** When the server cannot be reached, reads answer from the cache
///   (``Fetched/origin`` says so and how old it is); with nothing cached they throw
///   ``SuiteClientError/Code/offline``. Writes are never queued: they throw `offline`.
/// - **Writes** carry an `Idempotency-Key`, so Auth's retries never apply one twice.
/// - **Start-up cost.** Creating a client reads one settings file and nothing else: no
///   network, no cache scan; URL sessions are made on the first request.
/// - **Locks.** The client takes no file lock; settings commits (SharedDefaults) hold theirs
///   for microseconds, never across a request or a prompt.
public final class SuiteClient: Sendable {
    /// The configuration.
    public let configuration: SuiteClientConfiguration
    /// The server, resolved by the suite's precedence.
    public let server: ServerEndpoint
    /// The suite container (settings, token file, caches).
    public let container: URL
    /// The offline cache of this app's responses (`<container>/cache/<app>/`).
    public let cache: ResponseCache
    let logger: Logger
    let settings: SharedStore
    let tokens: TokenStore
    let end: ContinuousClock.Instant
    let reachability: Reachability
    private let authClient = Mutex<AuthClient?>(nil)
    private let sessionCheck = Mutex<Result<Void, SuiteClientError>?>(nil)
    private let plainTransport = Mutex<PlainTransport?>(nil)

    /// The shared-settings key of the server URL stored at sign-in.
    public static let serverURLKey = "serverURL"
    /// The shared-settings key of the signed-in associate's home store id.
    public static let homeStoreKey = "homeStoreID"

    /// Opens the suite container and settings and resolves the server. Starts the command's
    /// deadline. No network.
    /// - Throws: ``SuiteClientError`` `invalidInput` (a malformed `--server` or
    ///   `SHOPFLOOR_SERVER`), `storage` (the container or settings cannot be used).
    public init(configuration: SuiteClientConfiguration, logger: Logger) throws(SuiteClientError) {
        self.configuration = configuration
        self.logger = logger
        end = ContinuousClock.now + configuration.deadline
        do {
            settings = try SharedStore(
                suite: configuration.suite,
                root: configuration.root,
                refresh: .statEveryRead,
                logger: logger
            )
        } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        container = settings.containerURL
        tokens = TokenStore(directory: container)
        server = try ServerEndpoint.resolve(
            option: configuration.serverOption,
            environment: configuration.environment,
            stored: settings.string(forKey: Self.serverURLKey)
        )
        cache = ResponseCache(
            directory: container.appendingPathComponent("cache", isDirectory: true)
                .appendingPathComponent(configuration.appName, isDirectory: true),
            logger: logger
        )
        reachability = Reachability(
            host: server.host,
            port: server.port,
            timeout: configuration.connectTimeout,
            enabled: !Reachability.proxyConfigured(configuration.environment)
        )
    }

    // MARK: Session

    /// Whether credentials are stored (not whether the server still accepts them).
    public var isSignedIn: Bool { (try? tokens.load()) != nil }

    /// The signed-in user name and the server the session belongs to, from the token file.
    public var session: (username: String?, server: String)? {
        guard let stored = try? tokens.load() else { return nil }
        return (stored.username, stored.serverURL)
    }

    /// The home store stored at sign-in, if the associate has one.
    public var homeStoreID: UUID? {
        settings.string(forKey: Self.homeStoreKey).flatMap(UUID.init(uuidString:))
    }

    /// Signs in for every suite app: checks the client configuration (forced update), signs
    /// in through Auth, stores the server URL and the associate's home store in the shared
    /// settings, and returns who signed in.
    /// - Throws: ``SuiteClientError``: `updateRequired`, `signInRequired` (refused),
    ///   `rateLimited`, `offline`, `server`, `storage`.
    @discardableResult
    public func signIn(username: String, password: String) async throws(SuiteClientError)
        -> Associate
    {
        _ = try await clientConfiguration()
        let auth = self.auth
        let remaining = remainingTime
        try await raced { () throws(SuiteClientError) in
            do throws(AuthError) {
                _ = try await auth.signIn(
                    username: username,
                    password: password,
                    deadline: remaining
                )
            } catch {
                throw Self.map(error, app: self.configuration.appName)
            }
        }
        sessionCheck.withLock { $0 = nil }
        do {
            try settings.set(.string(server.url.absoluteString), forKey: Self.serverURLKey)
        } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        let associate = try await me()
        do {
            try settings.set(
                associate.homeStoreID.map { .string($0.uuidString) },
                forKey: Self.homeStoreKey
            )
        } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        logger.info("signed in", metadata: ["user": "\(username)", "server": "\(server)"])
        return associate
    }

    /// What sign-out achieved.
    public enum SignOutOutcome: Sendable, Equatable {
        /// Nobody was signed in.
        case notSignedIn
        /// The server revoked the session and the token file is gone.
        case revoked
        /// The token file is gone, but the server could not be told (the session lives on
        /// there until it expires); the reason for people.
        case localOnly(String)
    }

    /// Signs every suite app out: revokes the session on the server when it can be reached
    /// (within the connect timeout), removes the token file in any case, and empties this
    /// app's offline cache so no customer data stays behind. Never blocked by a forced update.
    public func signOut() async throws(SuiteClientError) -> SignOutOutcome {
        guard let stored = try? tokens.load() else {
            cache.removeAll()
            return .notSignedIn
        }
        // The session is revoked where it was issued, whatever --server says now.
        if let issuer = try? ServerEndpoint(
            parsing: stored.serverURL,
            source: .stored,
            origin: "the session's server"
        ), issuer.origin != server.origin {
            var elsewhere = configuration
            elsewhere.serverOption = issuer.url.absoluteString
            elsewhere.environment["SHOPFLOOR_SERVER"] = nil
            elsewhere.deadline = max(remainingTime, .milliseconds(1))
            return try await SuiteClient(configuration: elsewhere, logger: logger).signOut()
        }
        let auth = self.auth
        let remaining = remainingTime
        var outcome = SignOutOutcome.revoked
        do throws(SuiteClientError) {
            try await raced { () throws(SuiteClientError) in
                do throws(AuthError) {
                    try await auth.logout(deadline: remaining)
                } catch {
                    throw Self.map(error, app: self.configuration.appName)
                }
            }
        } catch {
            outcome = .localOnly(error.message)
        }
        // A cancelled or failed revoke still removes the file (Auth's contract); make sure.
        do { try tokens.remove() } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        cache.removeAll()
        return outcome
    }

    /// Whether the stored session belongs to this server (same scheme, host and port).
    /// Credentials are only ever sent to the server that issued them: with `--server`
    /// pointing elsewhere, signed requests fail with `signInRequired` and public ones go
    /// unsigned.
    public var isSignedInHere: Bool {
        if case .success = checkSession() { return true }
        return false
    }

    /// Checks once per client that a session exists and belongs to ``server``.
    func checkSession() -> Result<Void, SuiteClientError> {
        sessionCheck.withLock { cached in
            if let cached { return cached }
            let result: Result<Void, SuiteClientError>
            do throws(AuthError) {
                if let stored = try tokens.load() {
                    let issuer = try? ServerEndpoint(
                        parsing: stored.serverURL,
                        source: .stored,
                        origin: "the session's server"
                    )
                    if issuer?.origin == server.origin {
                        result = .success(())
                    } else {
                        result = .failure(
                            SuiteClientError(
                                .signInRequired,
                                "signed in to \(stored.serverURL), not to \(server): run `\(configuration.appName) login --server \(server)`"
                            )
                        )
                    }
                } else {
                    result = .failure(
                        SuiteClientError(
                            .signInRequired,
                            "not signed in: run `\(configuration.appName) login`"
                        )
                    )
                }
            } catch {
                result = .failure(SuiteClientError(.storage, error.message, cause: error))
            }
            cached = result
            return result
        }
    }

    /// The signed-in associate (`GET /v1/me`).
    public func me() async throws(SuiteClientError) -> Associate {
        let (data, response) = try await send(request(path: "/v1/me"))
        try check(response, data, what: "your account")
        return try decode(Associate.self, data, what: "/v1/me")
    }

    // MARK: Client configuration

    /// The client configuration for this app (and `store`, for its flags), fetched with
    /// `If-None-Match` against the last good copy, which is kept in the cache. Offline, the
    /// last good copy answers (``Fetched/origin`` is `cache`).
    ///
    /// - Parameter enforceMinimumVersion: throw `updateRequired` when this app is below the
    ///   server's minimum version (checked again on a cached copy, against this build).
    /// - Throws: ``SuiteClientError`` `updateRequired`, `offline` (no copy kept), `notFound`
    ///   (unknown store), `server`.
    public func clientConfiguration(store: UUID? = nil, enforceMinimumVersion: Bool = true)
        async throws(SuiteClientError) -> Fetched<ClientConfigurationResponse>
    {
        var query = [
            URLQueryItem(name: "app", value: configuration.appName),
            URLQueryItem(name: "version", value: configuration.appVersion.description),
        ]
        if let store { query.append(URLQueryItem(name: "store", value: store.uuidString)) }
        var request = request(path: "/v1/config/client", query: query)
        // The version is left out of the key: a newer build re-checks the same copy.
        let key = CacheKey(
            namespace: "config",
            name: "\(server.origin) \(configuration.appName) \(store?.uuidString ?? "global")"
        )
        let kept = cache.read(key)
        let keptValue = kept.flatMap {
            try? ModelsJSON.makeDecoder().decode(ClientConfigurationResponse.self, from: $0.body)
        }
        if let etag = kept?.etag, keptValue != nil {
            request.setValue(etag, forHTTPHeaderField: "If-None-Match")
        }
        let fetched: Fetched<ClientConfigurationResponse>
        do {
            let (data, response) = try await send(request, signed: isSignedInHere)
            if response.statusCode == 304, let kept, let keptValue {
                fetched = Fetched(value: keptValue, origin: .server, etag: kept.etag)
                try? cache.write(key, body: kept.body, etag: kept.etag)  // checked just now
            } else {
                try check(response, data, what: "the client configuration")
                let value = try decode(
                    ClientConfigurationResponse.self,
                    data,
                    what: "/v1/config/client"
                )
                let etag = response.value(forHTTPHeaderField: "ETag")
                do { try cache.write(key, body: data, etag: etag) } catch {
                    logger.warning(
                        "cannot keep the client configuration",
                        metadata: ["error": "\(error)"]
                    )
                }
                fetched = Fetched(value: value, origin: .server, etag: etag)
            }
        } catch {
            guard error.code == .offline || error.code == .server, let kept, let keptValue else {
                throw error
            }
            fetched = Fetched(
                value: keptValue,
                origin: .cache(fetchedAt: kept.fetchedAt, reason: error.message),
                etag: kept.etag
            )
        }
        if enforceMinimumVersion { try checkVersion(fetched.value) }
        return fetched
    }

    /// Throws `updateRequired` when the server asks for a newer client than this one.
    public func checkVersion(_ response: ClientConfigurationResponse) throws(SuiteClientError) {
        let minimum = response.configuration.minimumClientVersion
        let ours = configuration.appVersion
        guard ours < minimum || (response.updateRequired && ours <= minimum) else { return }
        throw SuiteClientError(
            .updateRequired,
            "update required: this \(configuration.appName) is version \(ours); the server at \(server) requires \(minimum) or later"
        )
    }

    // MARK: Requests

    /// A request for `path` (with `query`) on the server.
    public func request(
        path: String,
        query: [URLQueryItem] = [],
        method: String = "GET",
        body: Data? = nil
    ) -> URLRequest {
        var components = URLComponents(url: server.url, resolvingAgainstBaseURL: false)!
        components.percentEncodedPath = path
        if !query.isEmpty {
            components.queryItems = query
            // `+` is a space in form-style queries; encode it so a phone number survives.
            components.percentEncodedQuery = components.percentEncodedQuery?
                .replacingOccurrences(of: "+", with: "%2B")
        }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue(
            "\(configuration.appName)/\(configuration.appVersion)",
            forHTTPHeaderField: "User-Agent"
        )
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// Sends `request` (signed through Auth unless `signed` is false), racing the connect
    /// probe and the command's deadline. Any HTTP status is a result.
    /// - Throws: ``SuiteClientError``: `offline` (not reachable, or no answer by the
    ///   deadline), `signInRequired`, `cancelled`, `storage`, `server`.
    public func send(_ request: URLRequest, signed: Bool = true) async throws(SuiteClientError)
        -> (Data, HTTPURLResponse)
    {
        let remaining = remainingTime
        let app = configuration.appName
        if signed {
            try checkSession().get()
            let auth = self.auth
            return try await raced { () throws(SuiteClientError) in
                do throws(AuthError) {
                    return try await auth.send(request, deadline: remaining)
                } catch {
                    throw Self.map(error, app: app)
                }
            }
        }
        let path = request.url?.path ?? "?"
        if usesSocketTransport {
            // The same loopback server only: a redirect elsewhere is refused by the transport.
            let end = self.end
            return try await raced { () throws(SuiteClientError) in
                do throws(AuthError) {
                    return try await SocketTransport().send(
                        request,
                        deadline: end,
                        maxBodyBytes: Self.maxPublicResponseBytes
                    ) { _, _, new in .follow(new) }
                } catch {
                    throw Self.map(error, app: app)
                }
            }
        }
        let plain = self.plain
        return try await raced { () throws(SuiteClientError) in
            do {
                return try await plain.send(request)
            } catch {
                if Task.isCancelled {
                    throw SuiteClientError(.cancelled, "request to \(path) was cancelled")
                }
                throw SuiteClientError(
                    .offline,
                    "request to \(path) failed: \((error as NSError).localizedDescription)",
                    cause: error as NSError
                )
            }
        }
    }

    /// A signed GET whose answer is kept in the offline cache under `namespace`; offline,
    /// the kept answer is returned with its age. A 404 removes the kept answer.
    public func get<Value: Decodable & Sendable>(
        _ path: String,
        query: [URLQueryItem] = [],
        as type: Value.Type,
        cacheNamespace namespace: String,
        what: String
    ) async throws(SuiteClientError) -> Fetched<Value> {
        let request = request(path: path, query: query)
        let key = cacheKey(namespace: namespace, request: request)
        do {
            let (data, response) = try await send(request)
            if response.statusCode == 404 { cache.remove(key) }
            try check(response, data, what: what)
            let value = try decode(type, data, what: path)
            let etag = response.value(forHTTPHeaderField: "ETag")
            do { try cache.write(key, body: data, etag: etag) } catch {
                logger.warning(
                    "cannot keep \(what) for offline use",
                    metadata: ["error": "\(error)"]
                )
            }
            return Fetched(value: value, origin: .server, etag: etag)
        } catch {
            guard error.code == .offline else { throw error }
            guard let kept = cache.read(key),
                let value = try? ModelsJSON.makeDecoder().decode(type, from: kept.body)
            else {
                throw SuiteClientError(
                    .offline,
                    "offline: \(error.message); no copy of \(what) was kept from an earlier run",
                    cause: error
                )
            }
            return Fetched(
                value: value,
                origin: .cache(fetchedAt: kept.fetchedAt, reason: error.message),
                etag: kept.etag
            )
        }
    }

    /// A write (`POST`, `PATCH`) with a fresh `Idempotency-Key`, so Auth's retries after a
    /// lost answer never apply it twice; `headers` adds e.g. `If-Match`. Never queued: when
    /// the server cannot be reached this throws `offline` and nothing was sent, or (deadline)
    /// the outcome is unknown, which the message says.
    public func write<Value: Decodable & Sendable>(
        _ method: String,
        _ path: String,
        body: Data? = nil,
        headers: [String: String] = [:],
        as type: Value.Type,
        what: String
    ) async throws(SuiteClientError) -> WriteResponse<Value> {
        var request = request(path: path, method: method, body: body ?? Data())
        if body == nil { request.setValue(nil, forHTTPHeaderField: "Content-Type") }
        request.setValue(UUID().uuidString.lowercased(), forHTTPHeaderField: "Idempotency-Key")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let data: Data
        let response: HTTPURLResponse
        do {
            (data, response) = try await send(request)
        } catch {
            guard error.code == .offline else { throw error }
            let sent = reachability.outcome == .reachable
            throw SuiteClientError(
                .offline,
                sent
                    ? "offline: \(error.message); \(what) may or may not have been applied: look it up before trying again"
                    : "offline: \(error.message); \(what) was not sent (writes are never queued)",
                cause: error
            )
        }
        try check(response, data, what: what)
        return WriteResponse(
            value: try decode(type, data, what: path),
            status: response.statusCode,
            etag: response.value(forHTTPHeaderField: "ETag"),
            replayed: response.value(forHTTPHeaderField: "Idempotency-Replayed") == "true"
        )
    }

    /// The cache key of a request: the server's origin, the path and the query.
    public func cacheKey(namespace: String, request: URLRequest) -> CacheKey {
        let url = request.url
        var name = "\(server.origin) \(url?.path ?? "")"
        if let query = url?.query { name += "?\(query)" }
        return CacheKey(namespace: namespace, name: name)
    }

    /// Throws the typed error of a non-2xx answer, from its problem document.
    public func check(_ response: HTTPURLResponse, _ data: Data, what: String)
        throws(SuiteClientError)
    {
        let status = response.statusCode
        guard !(200..<300).contains(status) else { return }
        let problem = try? ModelsJSON.makeDecoder().decode(APIProblem.self, from: data)
        let detail =
            problem?.detail ?? problem?.title
            ?? HTTPURLResponse.localizedString(
                forStatusCode: status
            )
        let code: SuiteClientError.Code
        var message = detail
        switch status {
        case 400, 413: code = .invalidInput
        case 401:
            code = .signInRequired
            message = "sign-in required: \(detail) (run `\(configuration.appName) login`)"
        case 403 where problem?.type == ProblemType.featureDisabled: code = .featureDisabled
        case 403:
            code = .signInRequired
            message = "not allowed: \(detail)"
        case 404: code = .notFound
        case 409, 412: code = .conflict
        case 422 where problem?.type == ProblemType.validationFailed: code = .validationFailed
        case 426: code = .updateRequired
        case 429:
            code = .rateLimited
            if let after = response.value(forHTTPHeaderField: "Retry-After") {
                message += " (try again in \(after) s)"
            }
        case 502, 503, 504:
            code = .offline
            message = "the server at \(server) is unavailable (\(status)): \(detail)"
        case 500..<600:
            code = .server
            message = "the server failed on \(what) (\(status)): \(detail)"
        default: code = .server
        }
        throw SuiteClientError(
            code,
            message,
            status: status,
            problem: problem,
            fieldErrors: problem?.errors ?? []
        )
    }

    /// Decodes a body with the suite's decoder; a body that does not decode is `server`.
    public func decode<Value: Decodable>(_ type: Value.Type, _ data: Data, what: String)
        throws(SuiteClientError) -> Value
    {
        do {
            return try ModelsJSON.makeDecoder().decode(type, from: data)
        } catch {
            throw SuiteClientError(
                .server,
                "the server's answer to \(what) could not be read",
                cause: error as NSError
            )
        }
    }

    // MARK: Plumbing

    /// Time left before the command's deadline (never negative).
    public var remainingTime: Duration {
        max(.zero, end - ContinuousClock.now)
    }

    /// The longest answer to an unsigned request (the client configuration) that is read.
    static let maxPublicResponseBytes = 16 << 20

    /// Whether requests go over ``SocketTransport`` instead of URLSession: plain http to a
    /// server on this machine, with no proxy in the environment. A short command then never
    /// starts libcurl (its start-up, URLSession's threads) for the few kilobytes it asks for.
    var usesSocketTransport: Bool {
        SocketTransport.serves(server.url)
            && !Reachability.proxyConfigured(configuration.environment)
    }

    var auth: AuthClient {
        authClient.withLock { client in
            if let client { return client }
            let authConfiguration = AuthClientConfiguration(
                serverURL: server.url,
                deadline: configuration.deadline
            )
            let made =
                usesSocketTransport
                ? AuthClient(
                    configuration: authConfiguration,
                    store: tokens,
                    transport: SocketTransport(),
                    logger: logger
                )
                : AuthClient(configuration: authConfiguration, store: tokens, logger: logger)
            client = made
            return made
        }
    }

    var plain: PlainTransport {
        plainTransport.withLock { transport in
            if let transport { return transport }
            let made = PlainTransport(deadline: configuration.deadline)
            transport = made
            return made
        }
    }

    private enum RaceOutcome<Value: Sendable>: Sendable {
        case done(Result<Value, SuiteClientError>)
        case reachable
        case unreachable(String)
        case deadline
    }

    /// Runs `operation` against the connect probe and the command's deadline: whichever
    /// says no first cancels it.
    func raced<Value: Sendable>(
        _ operation: @escaping @Sendable () async throws(SuiteClientError) -> Value
    ) async throws(SuiteClientError) -> Value {
        if let outcome = reachability.outcome, case .unreachable(let reason) = outcome {
            throw offline(reason)
        }
        let end = self.end
        let reachability = self.reachability
        let deadline = configuration.deadline
        let result: Result<Value, SuiteClientError> = await withTaskGroup(
            of: RaceOutcome<Value>.self
        ) { group in
            group.addTask {
                do throws(SuiteClientError) {
                    return .done(.success(try await operation()))
                } catch {
                    return .done(.failure(error))
                }
            }
            group.addTask {
                switch await reachability.wait() {
                case .unreachable(let reason): return .unreachable(reason)
                case .reachable, nil: return .reachable
                }
            }
            group.addTask {
                do { try await Task.sleep(until: end, clock: .continuous) } catch {
                    return .reachable  // cancelled: the operation finished
                }
                return .deadline
            }
            // A connection failure waits for the probe (refused is known at once, silence
            // at the connect timeout), whose reason is the one people can act on.
            var failure: SuiteClientError?
            var reachable = false
            while let next = await group.next() {
                switch next {
                case .done(.failure(let error))
                where error.code == .offline && error.status == nil && !reachable:
                    failure = error
                case .done(let result):
                    group.cancelAll()
                    return result
                case .reachable:
                    reachable = true
                    if let failure {
                        group.cancelAll()
                        return .failure(failure)
                    }
                case .unreachable(let reason):
                    group.cancelAll()
                    return .failure(offline(reason))
                case .deadline:
                    group.cancelAll()
                    return .failure(
                        failure
                            ?? SuiteClientError(
                                .offline,
                                "the server at \(server) did not answer within \(ConnectProbe.describe(deadline))"
                            )
                    )
                }
            }
            return .failure(failure ?? SuiteClientError(.cancelled, "cancelled"))
        }
        if case .failure(let error) = result, error.code == .cancelled,
            let outcome = reachability.outcome, case .unreachable(let reason) = outcome
        {
            throw offline(reason)
        }
        return try result.get()
    }

    private func offline(_ reason: String) -> SuiteClientError {
        SuiteClientError(.offline, "the server at \(server) cannot be reached (\(reason))")
    }

    /// Auth's errors as the suite's.
    static func map(_ error: AuthError, app: String) -> SuiteClientError {
        switch error.code {
        case .signInRequired:
            SuiteClientError(
                .signInRequired,
                "sign-in required: \(error.message) (run `\(app) login`)",
                status: error.status,
                cause: error
            )
        case .invalidCredentials:
            SuiteClientError(
                .signInRequired,
                "sign-in refused: wrong user name or password",
                status: error.status,
                cause: error
            )
        case .deadlineExceeded, .transport:
            SuiteClientError(.offline, error.message, status: error.status, cause: error)
        case .cancelled:
            SuiteClientError(.cancelled, error.message, cause: error)
        case .tokenStore:
            SuiteClientError(.storage, error.message, cause: error)
        case .originMismatch:
            // Auth's own guard behind checkSession(): nothing was sent.
            SuiteClientError(
                .signInRequired,
                "\(error.message) (run `\(app) login --server URL`)",
                status: error.status,
                cause: error
            )
        case .insecureTransport:
            // The server URL is the problem: credentials need https off this machine.
            SuiteClientError(.invalidInput, error.message, cause: error)
        case .invalidRequest:
            SuiteClientError(.invalidInput, error.message, cause: error)
        case .invalidResponse, .invalidPasswordHash:
            if error.status == 429 {
                SuiteClientError(
                    .rateLimited,
                    "too many failed sign-ins; try again later",
                    status: 429,
                    cause: error
                )
            } else if let status = error.status, [502, 503, 504].contains(status) {
                SuiteClientError(.offline, error.message, status: status, cause: error)
            } else {
                SuiteClientError(.server, error.message, status: error.status, cause: error)
            }
        }
    }
}
