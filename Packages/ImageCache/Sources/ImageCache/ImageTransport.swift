public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Sends the pipeline's HTTP requests.
///
/// The suite's apps adapt Auth's signed client in one line:
/// `ClosureTransport { request in try await authClient.send(request) }`; unsigned requests
/// go through the suite's one URLSession bridge (Auth's `URLSessionHTTPTransport`) the same
/// way. ImageCache itself holds no URLSession.
///
/// Requirements: return any HTTP status as a response (the pipeline handles 304, 4xx and
/// 5xx); throw for a failed exchange (offline, refused, timed out; the pipeline then serves
/// stale data if it may); end promptly when the calling task is cancelled (the pipeline
/// cancels a download when every requester has gone). Do not answer from an HTTP cache of
/// your own: the pipeline sends its own conditional requests.
public protocol ImageTransport: Sendable {
    /// Sends `request` and returns the body and response, whatever the status.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}

/// A transport from a closure, such as `AuthClient.send`.
public struct ClosureTransport: ImageTransport {
    private let body: @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)

    /// Wraps `send`.
    public init(_ send: @escaping @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)) {
        body = send
    }

    /// Calls the closure.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await body(request)
    }
}
