public import Foundation
public import Logging
internal import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// What a successful sign-in tells the app (no secrets).
public struct SignInResult: Sendable, Equatable {
    /// The user who signed in.
    public var username: String
    /// The session's signing key id.
    public var signingKeyID: String
    /// When the access token expires (client clock).
    public var expiresAt: Date
    /// The origin the credentials are bound to (`https://host:port`).
    public var server: String
}

/// The suite's HTTP client for store-server: sign-in, signed requests, refresh, retries.
///
/// One sign-in serves every suite app: credentials live in the suite container's token file
/// (``TokenStore``), and every client re-reads it when it changes. The credentials are bound
/// to the origin (scheme, host, port) they were issued by:
/// - a request to any other origin is refused before anything is sent
///   (``AuthError/Code/originMismatch``), whatever server the app is configured for; refresh
///   and sign-out always go to the stored origin;
/// - credentials only travel over https, or plain http to loopback
///   (``AuthError/Code/insecureTransport`` otherwise, unless
///   ``AuthClientConfiguration/allowInsecureHTTP`` is set for a test rig);
/// - a redirect to another origin is never followed (``AuthError/Code/originMismatch``), so
///   neither credentials nor a body (307/308) go there; a same-origin redirect is re-signed
///   (the target URI is signed).
///
/// Each call refreshes the access token ahead of expiry (``AuthClientConfiguration/refreshMargin``)
/// and after a 401 `invalid-token`, with one refresh in flight per process and a lease so one
/// process refreshes for all. Only the token endpoint's refusal (400/401) ends the session;
/// network errors, 5xx and timeouts during a refresh are retried with backoff within the
/// refresh deadline and never sign anyone out. Requests are signed with ``RequestSigner``
/// using the clock skew learned from the server's `Date`, retried per ``RetryPolicy``, ended
/// by their deadline, and ended at once when their task is cancelled.
///
/// ```swift
/// let client = AuthClient(
///     configuration: AuthClientConfiguration(serverURL: URL(string: "https://store.example")!),
///     store: try TokenStore.suite(), logger: Logger(label: "scan"))
/// try await client.signIn(username: "ana", password: password)
/// let (data, response) = try await client.send(URLRequest(url: client.url("/v1/products")))
/// ```
public final class AuthClient: Sendable {
    /// The configuration.
    public let configuration: AuthClientConfiguration
    /// The token store shared with the suite's other apps.
    public let store: TokenStore
    private let transport: any AuthHTTPTransport
    private let clock: any AuthClock
    private let logger: Logger
    private let cache: CredentialCache
    private let skew = Mutex<TimeInterval>(0)

    /// The token endpoint's answer is small; anything longer is not ours.
    static let maxTokenResponseBytes = 64 * 1024

    /// Creates a client.
    /// - Parameters:
    ///   - configuration: server URL, deadlines, retry policy.
    ///   - store: where credentials live (``TokenStore/suite(_:root:)`` in apps).
    ///   - sessionConfiguration: URLSession settings (proxy, connect timeout…); cookies and
    ///     the URL cache are turned off on it.
    ///   - clock: the wall clock (tests inject a skewed one).
    ///   - logger: request outcomes at `debug`, refreshes and redirects at `info`/`notice`;
    ///     never a token, key, password or signature.
    public convenience init(
        configuration: AuthClientConfiguration,
        store: TokenStore,
        sessionConfiguration: URLSessionConfiguration = .ephemeral,
        clock: any AuthClock = SystemClock(),
        logger: Logger
    ) {
        sessionConfiguration.httpShouldSetCookies = false
        sessionConfiguration.httpCookieAcceptPolicy = .never
        sessionConfiguration.urlCache = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.init(
            configuration: configuration,
            store: store,
            transport: HTTPTransport(configuration: sessionConfiguration),
            clock: clock,
            logger: logger
        )
    }

    /// Creates a client that sends its requests through `transport` instead of URLSession
    /// (for example a plain-socket HTTP/1.1 transport for a loopback server, which spares a
    /// short-lived command libcurl's start-up). Everything else (signing, refresh, retries,
    /// redirect rules, deadlines) is the same.
    public init(
        configuration: AuthClientConfiguration,
        store: TokenStore,
        transport: any AuthHTTPTransport,
        clock: any AuthClock = SystemClock(),
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.cache = CredentialCache(store: store)
    }

    /// The server clock minus ours, in seconds, as learned from `Date` headers.
    public var clockSkew: TimeInterval { skew.withLock { $0 } }

    /// A URL on the configured server (`path` may include a query).
    public func url(_ path: String) -> URL {
        URL(string: path, relativeTo: configuration.serverURL)?.absoluteURL
            ?? configuration.serverURL
    }

    /// Whether credentials are stored (not whether the server still accepts them).
    public var isSignedIn: Bool { (try? store.load()) != nil }

    /// The server the stored credentials belong to, `nil` when nobody is signed in (or the
    /// token file cannot be read). Apps use it as the default server.
    public var signedInServer: URL? {
        guard let stored = try? store.load() else { return nil }
        return URL(string: stored.serverURL)
    }

    // MARK: Sign-in and sign-out

    /// Signs in to the configured server with the password grant and stores the credentials,
    /// bound to that server's origin, for every suite app.
    /// - Throws: ``AuthError`` `invalidCredentials` (400/401 from the server),
    ///   `insecureTransport`, `invalidResponse`, `transport`, `deadlineExceeded`, `cancelled`,
    ///   `tokenStore`.
    @discardableResult
    public func signIn(username: String, password: String, deadline: Duration? = nil)
        async throws(AuthError) -> SignInResult
    {
        let end = ContinuousClock.now + (deadline ?? configuration.deadline)
        guard let origin = Origin.of(configuration.serverURL),
            let server = URL(string: origin)
        else {
            throw AuthError(
                .invalidRequest,
                "server URL '\(configuration.serverURL.absoluteString)' is not an http or https URL"
            )
        }
        try checkTransport(server)
        let body = FormEncoding.encode([
            ("grant_type", "password"), ("username", username), ("password", password),
        ])
        let tokens = try await postToken(
            body: body,
            server: server,
            deadline: end,
            refusal: .invalidCredentials
        )
        let stored = try credentials(from: tokens, username: username, server: origin)
        try store.save(stored)
        await cache.adopt(try active(stored))
        logger.info(
            "signed in",
            metadata: [
                "user": "\(username)", "keyid": "\(stored.signingKeyID)", "server": "\(origin)",
            ]
        )
        return SignInResult(
            username: username,
            signingKeyID: stored.signingKeyID,
            expiresAt: stored.expiresAt,
            server: origin
        )
    }

    /// Revokes the session on the server it belongs to and removes the token file, signing
    /// out every suite app.
    ///
    /// Takes the refresh lease first (waiting at most the refresh deadline), so no refresh in
    /// another process writes the file back after it is gone. The file is removed even when
    /// the server cannot be reached or the file is damaged; that error is then thrown so the
    /// app can warn that the server session may live on until it expires.
    public func logout(deadline: Duration? = nil) async throws(AuthError) {
        let end = ContinuousClock.now + (deadline ?? configuration.deadline)
        let lease = try await waitForLease(until: min(end, .now + configuration.refreshDeadline))
        let stored: StoredCredentials?
        var failure: AuthError?
        do {
            stored = try store.load()
        } catch {
            stored = nil
            failure = AuthError(
                .tokenStore,
                "the token file was damaged and is removed; the server session could not be revoked and ends when it expires",
                cause: error
            )
        }
        if let stored {
            do {
                try await revoke(stored, deadline: end)
            } catch {
                failure = error
            }
        }
        let removal: AuthError?
        do {
            try store.remove()
            removal = nil
        } catch {
            removal = error
        }
        await cache.forget()
        if let lease { await store.releaseLease(lease) }
        if let removal { throw removal }
        if stored != nil || failure != nil {
            logger.info("signed out", metadata: ["keyid": "\(stored?.signingKeyID ?? "-")"])
        }
        if let failure { throw failure }
    }

    private func revoke(_ stored: StoredCredentials, deadline end: ContinuousClock.Instant)
        async throws(AuthError)
    {
        let active = try active(stored)
        let server = try boundServer(of: stored)
        var request = URLRequest(url: Self.resolve(configuration.revokePath, on: server))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = FormEncoding.encode([
            ("token", stored.refreshToken), ("token_type_hint", "refresh_token"),
        ])
        sign(&request, with: active)
        let (_, response) = try await transport.send(
            request,
            deadline: end,
            maxBodyBytes: Self.maxTokenResponseBytes,
            redirect: redirectRule(active)
        )
        learnSkew(from: response, data: Data(), origin: active.origin)
        guard (200..<300).contains(response.statusCode) else {
            throw AuthError(
                .invalidResponse,
                "the server answered \(response.statusCode) to sign-out",
                status: response.statusCode
            )
        }
    }

    /// Takes the refresh lease, waiting until `end` for another holder; `nil` when it stayed
    /// taken (sign-out goes on: a lease never outlives its holder's refresh deadline).
    private func waitForLease(until end: ContinuousClock.Instant) async throws(AuthError)
        -> TokenStore.Lease?
    {
        let duration = configuration.refreshDeadline.timeInterval
        while true {
            if let lease = try await store.tryAcquireLease(duration: duration) { return lease }
            guard ContinuousClock.now < end else { return nil }
            try await pause(.milliseconds(20), what: "sign-out")
        }
    }

    // MARK: Signed requests

    /// Sends a signed request to the server the credentials belong to and returns its answer
    /// (any HTTP status).
    ///
    /// `Content-Type`, `Idempotency-Key` and `If-Match`, when set, are covered by the
    /// signature; a request with a body and no `Content-Type` is sent as
    /// `application/octet-stream`. A URL fragment is dropped (it is never sent).
    /// - Parameters:
    ///   - request: method, absolute URL on the credentials' origin, headers and body.
    ///   - deadline: the whole call's deadline (default ``AuthClientConfiguration/deadline``).
    /// - Throws: ``AuthError``: `signInRequired` (no credentials, or the refresh token was
    ///   refused), `originMismatch` (another origin, or a redirect to one), `insecureTransport`,
    ///   `deadlineExceeded`, `cancelled`, `transport`, `invalidResponse` (a refresh failed for
    ///   a transient reason, or an oversized answer), `invalidRequest`, `tokenStore`.
    public func send(_ request: URLRequest, deadline: Duration? = nil) async throws(AuthError) -> (
        Data, HTTPURLResponse
    ) {
        let end = ContinuousClock.now + (deadline ?? configuration.deadline)
        var request = request
        guard let start = request.url.flatMap(Self.withoutFragment), Origin.of(start) != nil
        else {
            throw AuthError(.invalidRequest, "request URL must be an absolute http or https URL")
        }
        request.url = start
        var target = start
        var redirects = 0
        if request.httpBody.map({ !$0.isEmpty }) == true,
            request.value(forHTTPHeaderField: "Content-Type") == nil
        {
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        var path = target.path
        let method = request.httpMethod ?? "GET"
        let retryable = RetryPolicy.isIdempotent(request)
        let policy = configuration.retry
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        var refreshedAfter401 = false
        var resynced = false
        var resigned = false
        while true {
            if Task.isCancelled { throw AuthError(.cancelled, "request to \(path) was cancelled") }
            attempt += 1
            let active = try await validCredentials(for: target, deadline: end)
            var signed = request
            sign(&signed, with: active)
            let data: Data
            let response: HTTPURLResponse
            do {
                (data, response) = try await transport.send(
                    signed,
                    deadline: end,
                    maxBodyBytes: configuration.maxResponseBytes,
                    redirect: redirectRule(active)
                )
            } catch  where error.code == .transport && retryable && attempt < policy.maxAttempts {
                let wait = policy.backoff(retry: attempt, using: &generator)
                guard ContinuousClock.now + wait < end else { throw error }
                logger.debug(
                    "retrying after a connection failure",
                    metadata: ["path": "\(path)", "attempt": "\(attempt)"]
                )
                try await pause(wait, what: "request to \(path)")
                continue
            }
            learnSkew(from: response, data: data, origin: active.origin)
            let status = response.statusCode
            logger.debug(
                "response",
                metadata: [
                    "method": "\(method)", "path": "\(path)", "status": "\(status)",
                    "attempt": "\(attempt)",
                ]
            )
            if status == 401 {
                let type = Self.problemType(data)
                if type == AuthProblemType.invalidToken {
                    guard !refreshedAfter401 else {
                        throw AuthError(
                            .signInRequired,
                            "sign-in required: the server refused a freshly refreshed token",
                            status: 401
                        )
                    }
                    refreshedAfter401 = true
                    _ = try await refresh(replacing: active.credentials, deadline: end)
                    continue
                }
                if type == AuthProblemType.invalidSignature, retryable, !resigned {
                    // The transport below (libcurl) re-sends a request's exact bytes on a new
                    // connection when a reused one dies before the answer; the server refuses
                    // that copy as a replayed nonce. A request that may be repeated (an
                    // idempotent method, or an Idempotency-Key) is signed afresh, once.
                    resigned = true
                    logger.notice(
                        "signature refused; signing the request again",
                        metadata: ["method": "\(method)", "path": "\(path)"]
                    )
                    continue
                }
                if type == AuthProblemType.signatureOutsideWindow, !resynced {
                    resynced = true
                    logger.notice(
                        "signature outside the server's window; signing again with the learned clock skew",
                        metadata: ["skewSeconds": "\(Int(clockSkew))"]
                    )
                    continue
                }
                return (data, response)
            }
            if status == 307 || status == 308, redirects < 10,
                let location = Self.header("Location", in: response),
                let resolved = URL(string: location, relativeTo: target)?.absoluteURL,
                let next = Self.withoutFragment(resolved),
                Origin.of(next) == active.origin
            {
                // A same-origin 307/308 of a request with a body (see redirectDecision).
                redirects += 1
                target = next
                path = next.path
                request.url = next
                attempt = 0
                continue
            }
            if [429, 502, 503, 504].contains(status), retryable, attempt < policy.maxAttempts {
                guard let wait = retryWait(response, retry: attempt, using: &generator),
                    ContinuousClock.now + wait < end
                else { return (data, response) }
                logger.debug(
                    "retrying",
                    metadata: [
                        "path": "\(path)", "status": "\(status)",
                        "waitMs": "\(Int(wait.timeInterval * 1000))",
                    ]
                )
                try await pause(wait, what: "request to \(path)")
                continue
            }
            return (data, response)
        }
    }

    // MARK: Credentials and refresh

    /// The credentials for a request to `target`: refused before any network when `target`
    /// is not their origin, refreshed when they are about to expire.
    private func validCredentials(for target: URL, deadline: ContinuousClock.Instant)
        async throws(AuthError) -> ActiveCredentials
    {
        let active = try await cache.current()
        guard Origin.of(target) == active.origin else {
            throw AuthError(
                .originMismatch,
                "the stored credentials belong to \(active.origin), not \(Origin.of(target) ?? "?"); nothing was sent (sign in to that server to use it)"
            )
        }
        try checkTransport(target)
        if !active.credentials.needsRefresh(now: clock.now(), margin: configuration.refreshMargin) {
            return active
        }
        return try await refresh(replacing: active.credentials, deadline: deadline)
    }

    private func refresh(replacing stale: StoredCredentials, deadline: ContinuousClock.Instant)
        async throws(AuthError) -> ActiveCredentials
    {
        let task = try await cache.refreshTask(replacing: stale) { [self] stale throws(AuthError) in
            try await refreshAcrossProcesses(stale: stale)
        }
        return try await awaitValue(of: task, until: deadline, what: "token refresh")
    }

    /// One refresh for all processes sharing the token file: whoever holds the lease
    /// refreshes; the others wait for the file to change. After taking the lease the file is
    /// read again, so a refresh another process just finished is used, not repeated.
    /// Transient failures (network, 5xx, 429, a garbled answer) are retried with backoff
    /// (and `Retry-After`) until the refresh deadline; only a refusal ends the session.
    private func refreshAcrossProcesses(stale: StoredCredentials) async throws(AuthError)
        -> ActiveCredentials
    {
        let leaseDuration = configuration.refreshDeadline.timeInterval
        let end = ContinuousClock.now + configuration.refreshDeadline
        var generator = SystemRandomNumberGenerator()
        var failures = 0
        while true {
            if let fresh = try freshCredentials(replacing: stale) { return fresh }
            if let lease = try await store.tryAcquireLease(duration: leaseDuration) {
                let outcome: Result<ActiveCredentials, AuthError>
                do throws(AuthError) {
                    outcome = .success(try await refreshHoldingLease(stale: stale, until: end))
                } catch {
                    outcome = .failure(error)
                }
                await store.releaseLease(lease)
                switch outcome {
                case .success(let active):
                    return active
                case .failure(let error) where Self.isTransient(error):
                    failures += 1
                    var wait = configuration.retry.backoff(retry: failures, using: &generator)
                    if let retryAfter = error.retryAfter { wait = max(wait, retryAfter) }
                    guard ContinuousClock.now + wait < end else { throw error }
                    logger.notice(
                        "token refresh failed; retrying",
                        metadata: [
                            "reason": "\(error.code.rawValue)",
                            "status": "\(error.status.map(String.init) ?? "-")",
                            "attempt": "\(failures)", "waitMs": "\(Int(wait.timeInterval * 1000))",
                        ]
                    )
                    try await pause(wait, what: "token refresh")
                    continue
                case .failure(let error):
                    throw error
                }
            }
            guard ContinuousClock.now < end else {
                throw AuthError(
                    .deadlineExceeded,
                    "token refresh did not finish in time (another process holds the refresh lease)"
                )
            }
            try await pause(.milliseconds(20), what: "token refresh")
        }
    }

    /// One refresh attempt under the lease.
    private func refreshHoldingLease(stale: StoredCredentials, until end: ContinuousClock.Instant)
        async throws(AuthError) -> ActiveCredentials
    {
        if let fresh = try freshCredentials(replacing: stale) { return fresh }
        guard let current = try store.load() else {
            throw AuthError(.signInRequired, "not signed in: the token file was removed")
        }
        let server = try boundServer(of: current)
        try checkTransport(server)
        logger.info(
            "refreshing the access token",
            metadata: ["keyid": "\(current.signingKeyID)", "server": "\(current.serverURL)"]
        )
        let body = FormEncoding.encode([
            ("grant_type", "refresh_token"), ("refresh_token", current.refreshToken),
        ])
        let tokens: TokenResponse
        do {
            tokens = try await postToken(
                body: body,
                server: server,
                deadline: end,
                refusal: .signInRequired
            )
        } catch  where error.code == .signInRequired {
            // Before giving up: has someone (another process whose lease ran out) written
            // newer credentials in the meantime?
            if let newer = try store.load(), newer.refreshToken != current.refreshToken {
                logger.notice("refresh token refused, but the token file has newer credentials")
                return try active(newer)
            }
            throw error
        }
        let stored = try credentials(
            from: tokens,
            username: current.username,
            server: current.serverURL
        )
        try store.save(stored)
        return try active(stored)
    }

    /// Whether a refresh failure says nothing about the credentials (retry, keep the session).
    static func isTransient(_ error: AuthError) -> Bool {
        switch error.code {
        case .transport, .invalidResponse: return true
        default: return false
        }
    }

    /// The file's credentials if someone already replaced `stale` with usable ones.
    private func freshCredentials(replacing stale: StoredCredentials) throws(AuthError)
        -> ActiveCredentials?
    {
        guard let current = try store.load() else {
            throw AuthError(.signInRequired, "not signed in: the token file was removed")
        }
        guard current.accessToken != stale.accessToken,
            !current.needsRefresh(now: clock.now(), margin: configuration.refreshMargin)
        else { return nil }
        return try active(current)
    }

    /// Posts to the token endpoint of `server` (an origin URL). Redirects are never followed
    /// (the body holds secrets). 400/401 is a refusal (`refusal`); any other failure is
    /// `invalidResponse` or `transport` with the status, and `retryAfter` when the server
    /// sent one.
    private func postToken(
        body: Data,
        server: URL,
        deadline: ContinuousClock.Instant,
        refusal: AuthError.Code
    ) async throws(AuthError) -> TokenResponse {
        var request = URLRequest(url: Self.resolve(configuration.tokenPath, on: server))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = body
        let (data, response) = try await transport.send(
            request,
            deadline: deadline,
            maxBodyBytes: Self.maxTokenResponseBytes
        ) { _, status, new in
            .refuse(
                AuthError(
                    .originMismatch,
                    "the token endpoint answered \(status) redirecting to \(Origin.of(new.url) ?? "?"); token requests are never redirected",
                    status: status
                )
            )
        }
        learnSkew(from: response, data: data, origin: Origin.of(server) ?? "")
        switch response.statusCode {
        case 200:
            guard let tokens = try? JSONDecoder().decode(TokenResponse.self, from: data),
                !tokens.accessToken.isEmpty
            else {
                throw AuthError(
                    .invalidResponse,
                    "the token endpoint answered 200 with a body that is not a token response",
                    status: 200
                )
            }
            return tokens
        case 400, 401:
            let message =
                refusal == .invalidCredentials
                ? "the server refused the user name or password"
                : "sign-in required: the server refused the refresh token"
            throw AuthError(refusal, message, status: response.statusCode)
        default:
            var error = AuthError(
                .invalidResponse,
                "the token endpoint answered \(response.statusCode)",
                status: response.statusCode
            )
            if [429, 503].contains(response.statusCode),
                let header = Self.header("Retry-After", in: response)
            {
                error.retryAfter = retryAfter(header)
            }
            throw error
        }
    }

    private func credentials(from tokens: TokenResponse, username: String?, server: String)
        throws(AuthError) -> StoredCredentials
    {
        guard tokens.tokenType.lowercased() == "bearer", tokens.expiresIn > 0 else {
            throw AuthError(
                .invalidResponse,
                "the token endpoint answered an unsupported token type or lifetime"
            )
        }
        return StoredCredentials(
            accessToken: tokens.accessToken,
            refreshToken: tokens.refreshToken,
            expiresAt: clock.now() + TimeInterval(tokens.expiresIn),
            signingKeyID: tokens.signingKeyID,
            signingKey: tokens.signingKey,
            serverURL: server,
            username: username,
            lifetime: TimeInterval(tokens.expiresIn)
        )
    }

    private func active(_ stored: StoredCredentials) throws(AuthError) -> ActiveCredentials {
        ActiveCredentials(
            credentials: stored,
            signer: RequestSigner(key: try stored.makeSigningKey()),
            stamp: store.stamp()
        )
    }

    /// The origin the stored credentials are bound to, as a URL.
    private func boundServer(of stored: StoredCredentials) throws(AuthError) -> URL {
        guard let origin = Origin.of(stored.serverURL), let url = URL(string: origin) else {
            throw AuthError(
                .tokenStore,
                "the token file names no usable server ('\(stored.serverURL)'); sign in again"
            )
        }
        return url
    }

    /// Refuses plain http to a host that is not loopback, unless the configuration allows it.
    private func checkTransport(_ url: URL) throws(AuthError) {
        guard !Origin.isSecure(url), !configuration.allowInsecureHTTP else { return }
        throw AuthError(
            .insecureTransport,
            "refusing to send credentials over plain http to \(Origin.of(url) ?? "?"); use https (plain http is allowed to loopback only)"
        )
    }

    static func resolve(_ path: String, on server: URL) -> URL {
        URL(string: path, relativeTo: server)?.absoluteURL ?? server
    }

    static func withoutFragment(_ url: URL) -> URL? {
        guard url.fragment != nil else { return url }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return nil
        }
        components.fragment = nil
        return components.url
    }

    // MARK: Signing, skew, redirects

    private func createdNow() -> Int64 {
        Int64((clock.now().timeIntervalSince1970 + clockSkew).rounded(.down))
    }

    private func sign(_ request: inout URLRequest, with active: ActiveCredentials) {
        request.setValue(
            "Bearer " + active.credentials.accessToken,
            forHTTPHeaderField: "Authorization"
        )
        active.signer.sign(&request, created: createdNow())
    }

    /// Same origin: follow, signed again for the new target. Another origin: refused — the
    /// request carries credentials and maybe a body (307/308 would re-send it).
    private func redirectRule(_ active: ActiveCredentials) -> HTTPRedirectRule {
        { [self] original, status, new in redirectDecision(active, original, status, new) }
    }

    func redirectDecision(
        _ active: ActiveCredentials,
        _ original: URLRequest,
        _ status: Int,
        _ new: URLRequest
    ) -> HTTPRedirectDecision {
        guard Origin.of(new.url) == active.origin else {
            let to = Origin.of(new.url) ?? new.url?.scheme ?? "?"
            logger.notice(
                "cross-origin redirect of a signed request refused",
                metadata: ["from": "\(active.origin)", "to": "\(to)", "status": "\(status)"]
            )
            return .refuse(
                AuthError(
                    .originMismatch,
                    "the server answered \(status) redirecting \(original.url?.path ?? "?") to \(to); signed requests are not followed to another origin",
                    status: status
                )
            )
        }
        // Linux URLSession drops the body of a 307/308 it follows: `send` re-issues such a
        // request itself, body and signature included.
        if status == 307 || status == 308, original.httpBody?.isEmpty == false {
            return .deliver
        }
        var next = new
        sign(&next, with: active)  // the target URI is signed: sign the new one
        return .follow(next)
    }

    /// Learns the clock skew from a response's `Date`, only when the response is trusted:
    /// it comes from the credentials' origin over https or loopback, and it is a success or
    /// one of Auth's own 401 problems (not a proxy's error page); and only within
    /// ``AuthClientConfiguration/maxClockSkew``.
    private func learnSkew(from response: HTTPURLResponse, data: Data, origin: String) {
        guard Origin.of(response.url) == origin, Origin.isSecure(response.url) else { return }
        let status = response.statusCode
        let trusted =
            (200..<300).contains(status)
            || (status == 401 && Self.problemType(data)?.hasPrefix(AuthProblemType.base) == true)
        guard trusted, let text = Self.header("Date", in: response),
            let serverDate = HTTPDate.parse(text, now: clock.now())
        else { return }
        // Date has whole seconds (truncated), so the server's time is half a second later on average.
        let observed = serverDate.timeIntervalSince1970 + 0.5 - clock.now().timeIntervalSince1970
        guard abs(observed) <= configuration.maxClockSkew else {
            logger.warning(
                "server Date is further off than the largest accepted clock skew; ignored",
                metadata: [
                    "skewSeconds": "\(Int(observed))",
                    "maxSeconds": "\(Int(configuration.maxClockSkew))",
                ]
            )
            return
        }
        let changed = skew.withLock { skew in
            guard abs(skew - observed) > 1.0 else { return false }
            skew = observed
            return true
        }
        if changed {
            logger.info(
                "clock skew learned from the server",
                metadata: ["skewSeconds": "\(Int(observed.rounded()))"]
            )
        }
    }

    /// The wait before retrying a 429/502/503/504: the server's `Retry-After` on 429/503
    /// (`nil` when it is unreadable or longer than the backoff cap), else the backoff.
    private func retryWait(
        _ response: HTTPURLResponse,
        retry: Int,
        using generator: inout some RandomNumberGenerator
    ) -> Duration? {
        let status = response.statusCode
        if status == 429 || status == 503, let header = Self.header("Retry-After", in: response) {
            guard let wait = retryAfter(header), wait <= configuration.retry.maxDelay else {
                return nil
            }
            return wait
        }
        return configuration.retry.backoff(retry: retry, using: &generator)
    }

    /// `Retry-After` as a wait: delay-seconds, or an HTTP date in any of its three forms
    /// (judged by the server's clock as learned).
    func retryAfter(_ value: String) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.count <= 10,
            trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let seconds = Int(trimmed)
        {
            return .seconds(seconds)
        }
        guard let date = HTTPDate.parse(trimmed, now: clock.now()) else { return nil }
        let serverNow = clock.now().timeIntervalSince1970 + clockSkew
        return .seconds(max(0, date.timeIntervalSince1970 - serverNow))
    }

    private func pause(_ wait: Duration, what: String) async throws(AuthError) {
        do {
            try await Task.sleep(for: wait)
        } catch {
            throw AuthError(.cancelled, "\(what) was cancelled")
        }
    }

    static func header(_ name: String, in response: HTTPURLResponse) -> String? {
        for (key, value) in response.allHeaderFields {
            if let key = key as? String, key.caseInsensitiveCompare(name) == .orderedSame {
                return value as? String
            }
        }
        return nil
    }

    static func problemType(_ data: Data) -> String? {
        guard !data.isEmpty, data.count <= 64 * 1024 else { return nil }
        struct Probe: Decodable { var type: String? }
        return (try? JSONDecoder().decode(Probe.self, from: data))?.type
    }
}
