public import Foundation

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

/// The wall clock the client signs with and judges expiry by (injected in tests).
public protocol AuthClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemClock: AuthClock {
    /// Creates the system clock.
    public init() {}
    /// The current system time.
    public func now() -> Date { Date() }
}

/// When and how a request is tried again.
///
/// Only idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE, TRACE) or a POST/PATCH that
/// carries `Idempotency-Key` are retried: after a connection failure, or a 429, 502, 503 or
/// 504 answer. The wait is full-jitter exponential backoff (`random(0, min(cap, base·2ⁿ))`),
/// or the server's `Retry-After` (seconds or HTTP date) on 429 and 503 — never past the
/// call's deadline: when the wait would end after it, the last answer is returned at once.
public struct RetryPolicy: Sendable {
    /// Attempts in all, including the first.
    public var maxAttempts: Int
    /// The backoff base.
    public var baseDelay: Duration
    /// The backoff cap (also caps `Retry-After`).
    public var maxDelay: Duration

    /// Creates a policy.
    public init(
        maxAttempts: Int = 4,
        baseDelay: Duration = .milliseconds(200),
        maxDelay: Duration = .seconds(10)
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// No retries.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The full-jitter backoff before retry number `retry` (1-based).
    public func backoff(retry: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let base =
            Double(baseDelay.components.seconds) + Double(baseDelay.components.attoseconds) / 1e18
        let cap =
            Double(maxDelay.components.seconds) + Double(maxDelay.components.attoseconds) / 1e18
        let ceiling = min(cap, base * pow(2, Double(min(retry - 1, 30))))
        return .seconds(Double.random(in: 0...max(0, ceiling), using: &generator))
    }

    static func isIdempotent(_ request: URLRequest) -> Bool {
        switch (request.httpMethod ?? "GET").uppercased() {
        case "GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE": return true
        default: return request.value(forHTTPHeaderField: "Idempotency-Key") != nil
        }
    }
}

/// How an ``AuthClient`` talks to the server.
public struct AuthClientConfiguration: Sendable {
    /// The store-server base URL (`http://127.0.0.1:8080`).
    public var serverURL: URL
    /// The overall deadline of one call (retries, refresh and redirects included).
    public var deadline: Duration
    /// Refresh when the access token expires within this margin.
    public var refreshMargin: TimeInterval
    /// The deadline of one refresh (its retries included), and the lease's lifetime.
    public var refreshDeadline: Duration
    /// Retries of requests, and of a refresh after a transient failure.
    public var retry: RetryPolicy
    /// The path of the token endpoint.
    public var tokenPath: String
    /// The path of the revocation endpoint (RFC 7009 style form `token=…`).
    public var revokePath: String
    /// Allows credentials over plain http to hosts that are not loopback. For test rigs on a
    /// private network only: anyone on the path can read the token answer, which carries the
    /// signing key. Off by default; http to `localhost`, `127.0.0.0/8` and `::1` is always
    /// allowed.
    public var allowInsecureHTTP: Bool
    /// The largest clock skew learned from the server's `Date` header, either way (default
    /// one day); a `Date` further off is ignored and logged.
    public var maxClockSkew: TimeInterval
    /// The longest response body accepted (default 16 MiB; the token endpoint's answer is
    /// held to 64 KiB); a longer one ends the call with `invalidResponse`.
    public var maxResponseBytes: Int

    /// Creates a configuration with the suite's defaults (30 s deadline, 60 s margin, 10 s
    /// refresh deadline, https required except on loopback).
    public init(
        serverURL: URL,
        deadline: Duration = .seconds(30),
        refreshMargin: TimeInterval = 60,
        refreshDeadline: Duration = .seconds(10),
        retry: RetryPolicy = RetryPolicy(),
        tokenPath: String = "/v1/auth/token",
        revokePath: String = "/v1/auth/revoke",
        allowInsecureHTTP: Bool = false,
        maxClockSkew: TimeInterval = 86_400,
        maxResponseBytes: Int = 16 << 20
    ) {
        self.serverURL = serverURL
        self.deadline = deadline
        self.refreshMargin = refreshMargin
        self.refreshDeadline = refreshDeadline
        self.retry = retry
        self.tokenPath = tokenPath
        self.revokePath = revokePath
        self.allowInsecureHTTP = allowInsecureHTTP
        self.maxClockSkew = max(0, maxClockSkew)
        self.maxResponseBytes = max(1, maxResponseBytes)
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
