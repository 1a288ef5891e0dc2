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
    let transport: any AuthHTTPTransport
    let clock: any AuthClock
    let logger: Logger
    let cache: CredentialCache
    let skew = Mutex<TimeInterval>(0)

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
        self.init(
            configuration: configuration,
            store: store,
            transport: URLSessionHTTPTransport(configuration: sessionConfiguration),
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
        // A server that cannot answer now (its database away: 503, or a gateway's 502/504)
        // or a connection that fails is asked again within the deadline: a password grant
        // that was not answered issued nothing.
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        var lastRetried: AuthError?
        var tokens: TokenResponse
        while true {
            attempt += 1
            do {
                tokens = try await postToken(
                    body: body,
                    server: server,
                    deadline: end,
                    refusal: .invalidCredentials
                )
                break
            } catch {
                // A retry the deadline cuts short answers with the failure it retried, as
                // when too little time is left to try again (below).
                if error.code == .deadlineExceeded, let lastRetried { throw lastRetried }
                let unavailable = [502, 503, 504].contains(error.status ?? 0)
                guard unavailable || error.code == .transport,
                    attempt < configuration.retry.maxAttempts
                else { throw error }
                let wait =
                    error.retryAfter
                    ?? configuration.retry.backoff(retry: attempt, using: &generator)
                guard wait <= configuration.retry.maxDelay, ContinuousClock.now + wait < end
                else { throw error }
                lastRetried = error
                logger.debug(
                    "retrying the sign-in",
                    metadata: ["status": "\(error.status ?? 0)", "attempt": "\(attempt)"]
                )
                try await pause(wait, what: "the sign-in")
            }
        }
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

    func revoke(_ stored: StoredCredentials, deadline end: ContinuousClock.Instant)
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
    func waitForLease(until end: ContinuousClock.Instant) async throws(AuthError)
        -> TokenStore.Lease?
    {
        let duration = configuration.refreshDeadline.timeInterval
        while true {
            if let lease = try await store.tryAcquireLease(duration: duration) { return lease }
            guard ContinuousClock.now < end else { return nil }
            try await pause(.milliseconds(20), what: "sign-out")
        }
    }
}
