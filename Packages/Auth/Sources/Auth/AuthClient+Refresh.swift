internal import Foundation
internal import Logging
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

extension AuthClient {
    // MARK: Credentials and refresh

    /// The credentials for a request to `target`: refused before any network when `target`
    /// is not their origin, refreshed when they are about to expire.
    func validCredentials(for target: URL, deadline: ContinuousClock.Instant)
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

    func refresh(replacing stale: StoredCredentials, deadline: ContinuousClock.Instant)
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
    func refreshAcrossProcesses(stale: StoredCredentials) async throws(AuthError)
        -> ActiveCredentials
    {
        let leaseDuration = configuration.refreshDeadline.timeInterval
        let end = ContinuousClock.now + configuration.refreshDeadline
        var generator = SystemRandomNumberGenerator()
        var failures = 0
        var lastTransient: AuthError?
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
                    lastTransient = error
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
                case .failure(let error) where error.code == .deadlineExceeded:
                    // The deadline cut short a retry: the failure it retried is the answer,
                    // as when too little time is left to try again (above), so the outcome
                    // does not depend on how late in the window the last attempt started.
                    throw lastTransient ?? error
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
    func refreshHoldingLease(stale: StoredCredentials, until end: ContinuousClock.Instant)
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
    func freshCredentials(replacing stale: StoredCredentials) throws(AuthError)
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
    func postToken(
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

    func credentials(from tokens: TokenResponse, username: String?, server: String)
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

    func active(_ stored: StoredCredentials) throws(AuthError) -> ActiveCredentials {
        ActiveCredentials(
            credentials: stored,
            signer: RequestSigner(key: try stored.makeSigningKey()),
            stamp: store.stamp()
        )
    }

    /// The origin the stored credentials are bound to, as a URL.
    func boundServer(of stored: StoredCredentials) throws(AuthError) -> URL {
        guard let origin = Origin.of(stored.serverURL), let url = URL(string: origin) else {
            throw AuthError(
                .tokenStore,
                "the token file names no usable server ('\(stored.serverURL)'); sign in again"
            )
        }
        return url
    }

    /// Refuses plain http to a host that is not loopback, unless the configuration allows it.
    func checkTransport(_ url: URL) throws(AuthError) {
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
}
