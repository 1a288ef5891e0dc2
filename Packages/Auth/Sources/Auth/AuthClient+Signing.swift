internal import Foundation
internal import Logging
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

extension AuthClient {
    // MARK: Signing, skew, redirects

    func createdNow() -> Int64 {
        Int64((clock.now().timeIntervalSince1970 + clockSkew).rounded(.down))
    }

    func sign(_ request: inout URLRequest, with active: ActiveCredentials) {
        request.setValue(
            "Bearer " + active.credentials.accessToken,
            forHTTPHeaderField: "Authorization"
        )
        active.signer.sign(&request, created: createdNow())
    }

    /// Same origin: follow, signed again for the new target. Another origin: refused — the
    /// request carries credentials and maybe a body (307/308 would re-send it).
    func redirectRule(_ active: ActiveCredentials) -> HTTPRedirectRule {
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
    func learnSkew(from response: HTTPURLResponse, data: Data, origin: String) {
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
    func retryWait(
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

    func pause(_ wait: Duration, what: String) async throws(AuthError) {
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
