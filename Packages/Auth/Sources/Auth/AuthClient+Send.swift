public import Foundation
internal import Logging
internal import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension AuthClient {
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
}
