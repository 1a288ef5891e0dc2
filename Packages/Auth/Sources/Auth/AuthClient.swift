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
}

/// The suite's HTTP client for store-server: sign-in, signed requests, refresh, retries.
///
/// One sign-in serves every suite app: credentials live in the suite container's token file
/// (``TokenStore``), and every client re-reads it when it changes. Each call:
/// - refreshes the access token ahead of expiry (``AuthClientConfiguration/refreshMargin``)
///   and after a 401 `invalid-token`, with one refresh in flight per process and a lease so
///   one process refreshes for all;
/// - signs with ``RequestSigner`` using the clock skew learned from the server's `Date`;
/// - retries per ``RetryPolicy``; ends by its deadline; honours task cancellation;
/// - drops `Authorization` and the signature on a cross-origin redirect (and re-signs on a
///   same-origin one, since the target URI is signed).
///
/// ```swift
/// let client = AuthClient(
///     configuration: AuthClientConfiguration(serverURL: URL(string: "http://127.0.0.1:8080")!),
///     store: try TokenStore.suite(), logger: Logger(label: "scan"))
/// try await client.signIn(username: "ana", password: password)
/// let (data, response) = try await client.send(URLRequest(url: client.url("/v1/products")))
/// ```
public final class AuthClient: Sendable {
    /// The configuration.
    public let configuration: AuthClientConfiguration
    /// The token store shared with the suite's other apps.
    public let store: TokenStore
    private let transport: HTTPTransport
    private let clock: any AuthClock
    private let logger: Logger
    private let cache: CredentialCache
    private let skew = Mutex<TimeInterval>(0)

    /// Creates a client.
    /// - Parameters:
    ///   - configuration: server URL, deadlines, retry policy.
    ///   - store: where credentials live (``TokenStore/suite(_:root:)`` in apps).
    ///   - sessionConfiguration: URLSession settings (proxy, connect timeout…); cookies and
    ///     the URL cache are turned off on it.
    ///   - clock: the wall clock (tests inject a skewed one).
    ///   - logger: request outcomes at `debug`, refreshes and redirects at `info`/`notice`;
    ///     never a token, key, password or signature.
    public init(
        configuration: AuthClientConfiguration,
        store: TokenStore,
        sessionConfiguration: URLSessionConfiguration = .ephemeral,
        clock: any AuthClock = SystemClock(),
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        sessionConfiguration.httpShouldSetCookies = false
        sessionConfiguration.httpCookieAcceptPolicy = .never
        sessionConfiguration.urlCache = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.transport = HTTPTransport(configuration: sessionConfiguration)
        self.clock = clock
        self.logger = logger
        self.cache = CredentialCache(store: store, maxFailures: configuration.maxRefreshFailures)
    }

    /// The server clock minus ours, in seconds, as learned from `Date` headers.
    public var clockSkew: TimeInterval { skew.withLock { $0 } }

    /// A URL on the server (`path` may include a query).
    public func url(_ path: String) -> URL {
        URL(string: path, relativeTo: configuration.serverURL)?.absoluteURL
            ?? configuration.serverURL
    }

    /// Whether credentials are stored (not whether the server still accepts them).
    public var isSignedIn: Bool { (try? store.load()) != nil }

    // MARK: Sign-in and sign-out

    /// Signs in with the password grant and stores the credentials for every suite app.
    /// - Throws: ``AuthError`` `invalidCredentials` (400/401 from the server),
    ///   `invalidResponse`, `transport`, `deadlineExceeded`, `cancelled`, `tokenStore`.
    @discardableResult
    public func signIn(username: String, password: String, deadline: Duration? = nil)
        async throws(AuthError) -> SignInResult
    {
        let end = ContinuousClock.now + (deadline ?? configuration.deadline)
        let body = FormEncoding.encode([
            ("grant_type", "password"), ("username", username), ("password", password),
        ])
        let tokens = try await postToken(body: body, deadline: end, refusal: .invalidCredentials)
        let stored = try credentials(from: tokens, username: username)
        try store.save(stored)
        await cache.adopt(try active(stored))
        logger.info(
            "signed in",
            metadata: ["user": "\(username)", "keyid": "\(stored.signingKeyID)"]
        )
        return SignInResult(
            username: username,
            signingKeyID: stored.signingKeyID,
            expiresAt: stored.expiresAt
        )
    }

    /// Revokes the session on the server and removes the token file, signing out every
    /// suite app. The file is removed even when the server cannot be reached; that error is
    /// then thrown so the app can warn that the server session may live on until it expires.
    public func logout(deadline: Duration? = nil) async throws(AuthError) {
        guard let stored = try store.load() else { return }
        let end = ContinuousClock.now + (deadline ?? configuration.deadline)
        var request = URLRequest(url: url(configuration.revokePath))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = FormEncoding.encode([
            ("token", stored.refreshToken), ("token_type_hint", "refresh_token"),
        ])
        var failure: AuthError?
        do {
            let active = try active(stored)
            sign(&request, with: active)
            let (_, response) = try await transport.send(
                request,
                deadline: end,
                redirect: redirectRule(active)
            )
            learnSkew(from: response)
            if !(200..<300).contains(response.statusCode) {
                failure = AuthError(
                    .invalidResponse,
                    "the server answered \(response.statusCode) to sign-out",
                    status: response.statusCode
                )
            }
        } catch {
            failure = error
        }
        try store.remove()
        await cache.forget()
        logger.info("signed out", metadata: ["keyid": "\(stored.signingKeyID)"])
        if let failure { throw failure }
    }

    // MARK: Signed requests

    /// Sends a signed request and returns the server's answer (any HTTP status).
    ///
    /// - Parameters:
    ///   - request: method, URL (absolute, on any origin), headers and body.
    ///   - deadline: the whole call's deadline (default ``AuthClientConfiguration/deadline``).
    /// - Throws: ``AuthError``: `signInRequired` (no credentials, refresh refused or failing),
    ///   `deadlineExceeded`, `cancelled`, `transport`, `invalidRequest`, `tokenStore`.
    public func send(_ request: URLRequest, deadline: Duration? = nil) async throws(AuthError) -> (
        Data, HTTPURLResponse
    ) {
        let end = ContinuousClock.now + (deadline ?? configuration.deadline)
        guard let target = request.url, let scheme = target.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else {
            throw AuthError(.invalidRequest, "request URL must be an absolute http or https URL")
        }
        let path = target.path
        let method = request.httpMethod ?? "GET"
        let retryable = RetryPolicy.isIdempotent(request)
        let policy = configuration.retry
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        var refreshedAfter401 = false
        var resynced = false
        while true {
            if Task.isCancelled { throw AuthError(.cancelled, "request to \(path) was cancelled") }
            attempt += 1
            let active = try await validCredentials(deadline: end)
            var signed = request
            sign(&signed, with: active)
            let data: Data
            let response: HTTPURLResponse
            do {
                (data, response) = try await transport.send(
                    signed,
                    deadline: end,
                    redirect: redirectRule(active)
                )
            } catch  where error.code == .transport && retryable && attempt < policy.maxAttempts {
                let wait = policy.backoff(retry: attempt, using: &generator)
                guard ContinuousClock.now + wait < end else { throw error }
                logger.debug(
                    "retrying after a connection failure",
                    metadata: ["path": "\(path)", "attempt": "\(attempt)"]
                )
                try await pause(wait, path: path)
                continue
            }
            learnSkew(from: response)
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
                if type == AuthProblemType.signatureOutsideWindow, !resynced {
                    resynced = true
                    logger.notice(
                        "signature outside the server's window; retrying with the learned clock skew",
                        metadata: ["skewSeconds": "\(Int(clockSkew))"]
                    )
                    continue
                }
                return (data, response)
            }
            if [429, 502, 503, 504].contains(status), retryable, attempt < policy.maxAttempts {
                var wait = policy.backoff(retry: attempt, using: &generator)
                if status == 429 || status == 503,
                    let header = Self.header("Retry-After", in: response)
                {
                    guard let retryAfter = retryAfter(header), retryAfter <= policy.maxDelay else {
                        return (data, response)
                    }
                    wait = retryAfter
                }
                guard ContinuousClock.now + wait < end else { return (data, response) }
                logger.debug(
                    "retrying",
                    metadata: [
                        "path": "\(path)", "status": "\(status)",
                        "waitMs": "\(Int(wait.timeInterval * 1000))",
                    ]
                )
                try await pause(wait, path: path)
                continue
            }
            return (data, response)
        }
    }

    // MARK: Credentials and refresh

    private func validCredentials(deadline: ContinuousClock.Instant) async throws(AuthError)
        -> ActiveCredentials
    {
        let active = try await cache.current()
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
    private func refreshAcrossProcesses(stale: StoredCredentials) async throws(AuthError)
        -> ActiveCredentials
    {
        let leaseDuration = configuration.refreshDeadline.timeInterval
        let end = ContinuousClock.now + configuration.refreshDeadline
        while true {
            if let fresh = try freshCredentials(replacing: stale) { return fresh }
            if let lease = try store.tryAcquireLease(duration: leaseDuration) {
                defer { store.releaseLease(lease) }
                if let fresh = try freshCredentials(replacing: stale) { return fresh }
                guard let current = try store.load() else {
                    throw AuthError(.signInRequired, "not signed in: the token file was removed")
                }
                logger.info(
                    "refreshing the access token",
                    metadata: ["keyid": "\(current.signingKeyID)"]
                )
                let body = FormEncoding.encode([
                    ("grant_type", "refresh_token"), ("refresh_token", current.refreshToken),
                ])
                let tokens = try await postToken(
                    body: body,
                    deadline: end,
                    refusal: .signInRequired
                )
                let stored = try credentials(from: tokens, username: current.username)
                try store.save(stored)
                return try active(stored)
            }
            guard ContinuousClock.now < end else {
                throw AuthError(
                    .deadlineExceeded,
                    "token refresh did not finish in time (another process holds the refresh lease)"
                )
            }
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                throw AuthError(.cancelled, "token refresh was cancelled")
            }
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

    private func postToken(body: Data, deadline: ContinuousClock.Instant, refusal: AuthError.Code)
        async throws(AuthError) -> TokenResponse
    {
        var request = URLRequest(url: url(configuration.tokenPath))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = body
        let (data, response) = try await transport.send(request, deadline: deadline) {
            original,
            new in
            // The token endpoint is never followed to another origin: the body holds secrets.
            Origin.same(original.url, new.url) ? new : nil
        }
        learnSkew(from: response)
        switch response.statusCode {
        case 200:
            guard let tokens = try? JSONDecoder().decode(TokenResponse.self, from: data),
                !tokens.accessToken.isEmpty
            else {
                throw AuthError(
                    .invalidResponse,
                    "the token endpoint answered 200 with a body that is not a token response"
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
            throw AuthError(
                .invalidResponse,
                "the token endpoint answered \(response.statusCode)",
                status: response.statusCode
            )
        }
    }

    private func credentials(from tokens: TokenResponse, username: String?) throws(AuthError)
        -> StoredCredentials
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
            serverURL: configuration.serverURL.absoluteString,
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

    private func redirectRule(_ active: ActiveCredentials) -> HTTPTransport.RedirectRule {
        { [self] original, new in
            var new = new
            if Origin.same(original.url, new.url) {
                sign(&new, with: active)  // the target URI is signed: sign the new one
            } else {
                for name in [
                    "Authorization", "Signature", "Signature-Input", "Content-Digest", "Cookie",
                ] {
                    new.setValue(nil, forHTTPHeaderField: name)
                }
                logger.notice(
                    "cross-origin redirect: credentials and signature dropped",
                    metadata: [
                        "from": "\(Origin.of(original.url) ?? "?")",
                        "to": "\(Origin.of(new.url) ?? "?")",
                    ]
                )
            }
            return new
        }
    }

    private func learnSkew(from response: HTTPURLResponse) {
        guard let text = Self.header("Date", in: response), let serverDate = HTTPDate.parse(text)
        else { return }
        // Date has whole seconds (truncated), so the server's time is half a second later on average.
        let observed = serverDate.timeIntervalSince1970 + 0.5 - clock.now().timeIntervalSince1970
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

    private func retryAfter(_ value: String) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        let serverNow = clock.now().timeIntervalSince1970 + clockSkew
        return .seconds(max(0, date.timeIntervalSince1970 - serverNow))
    }

    private func pause(_ wait: Duration, path: String) async throws(AuthError) {
        do {
            try await Task.sleep(for: wait)
        } catch {
            throw AuthError(.cancelled, "request to \(path) was cancelled")
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
        struct Probe: Decodable { var type: String? }
        return (try? JSONDecoder().decode(Probe.self, from: data))?.type
    }
}
