internal import Foundation
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

/// Unsigned requests to the server's public routes (`/v1/config/client`) before anyone has
/// signed in. Signed requests go through Auth's `AuthClient`.
///
/// URLSession's idle timeout is set to the command's whole deadline, so it never cuts a slow
/// answer short; the deadline itself and the connect timeout are enforced by ``SuiteClient``.
final class PlainTransport: Sendable {
    private let session: URLSession

    init(deadline: Duration) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let seconds = max(1, Double(deadline.components.seconds) + 1)
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        session = URLSession(configuration: configuration)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends `request`; any HTTP status is a result. Cancelling the calling task cancels the
    /// URL task at once.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let holder = TaskHolder()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let http = response as? HTTPURLResponse {
                        continuation.resume(returning: (data ?? Data(), http))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                holder.set(task)
                task.resume()
            }
        } onCancel: {
            holder.cancel()
        }
    }
}

/// The URL task of one call, so a cancellation that comes before or after it exists
/// cancels it.
private final class TaskHolder: Sendable {
    private struct State {
        var task: URLSessionTask?
        var cancelled = false
    }
    // URLSessionTask.cancel() is thread-safe; the Mutex guards the reference and the flag.
    private let state = Mutex<State>(State())

    func set(_ task: URLSessionTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}
