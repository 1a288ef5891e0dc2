public import Foundation
internal import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Sends the pipeline's HTTP requests.
///
/// The suite's apps adapt Auth's signed client in one line:
/// `ClosureTransport { request in try await authClient.send(request) }`. Tests and tools
/// without sign-in use ``URLSessionTransport``.
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

/// A plain URLSession transport (no signing, no HTTP cache of its own), for images on public
/// servers, tools and tests. Cancelling the calling task cancels the URL task.
public final class URLSessionTransport: ImageTransport {
    private let session: URLSession

    /// Creates a transport on an ephemeral session without `URLCache`.
    ///
    /// - Parameter timeout: the idle timeout of each request, in seconds.
    public init(timeout: TimeInterval = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends `request`; throws `CancellationError` when the calling task is cancelled.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let state = TransportCallBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    let resume = state.state.withLock { call -> Bool in
                        guard !call.finished else { return false }
                        call.finished = true
                        return true
                    }
                    guard resume else { return }
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let http = response as? HTTPURLResponse {
                        continuation.resume(returning: (data ?? Data(), http))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                let cancelled = state.state.withLock { call -> Bool in
                    call.task = task
                    return call.cancelled
                }
                if cancelled {
                    let resume = state.state.withLock { call -> Bool in
                        guard !call.finished else { return false }
                        call.finished = true
                        return true
                    }
                    if resume { continuation.resume(throwing: CancellationError()) }
                    return
                }
                task.resume()
            }
        } onCancel: {
            let task = state.state.withLock { call -> URLSessionDataTask? in
                call.cancelled = true
                return call.task
            }
            task?.cancel()
        }
    }
}

/// One URLSession call's shared state: the task to cancel and whether the continuation was
/// resumed.
struct TransportCall {
    var task: URLSessionDataTask?
    var cancelled = false
    var finished = false
}

final class TransportCallBox: Sendable {
    let state = Mutex(TransportCall())
}
