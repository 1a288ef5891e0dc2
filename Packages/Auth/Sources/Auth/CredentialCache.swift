internal import Foundation
internal import Synchronization

/// Credentials ready to sign with.
struct ActiveCredentials: Sendable {
    let credentials: StoredCredentials
    let signer: RequestSigner
    let stamp: FileStamp?
    /// The origin the credentials are bound to (`scheme://host:port`); empty when the file
    /// names none, which matches no request.
    let origin: String

    init(credentials: StoredCredentials, signer: RequestSigner, stamp: FileStamp?) {
        self.credentials = credentials
        self.signer = signer
        self.stamp = stamp
        self.origin = Origin.of(credentials.serverURL) ?? ""
    }
}

/// In-process single flight over the token file: any number of concurrent callers share
/// one refresh. A refresh the server refused (`signInRequired`) is remembered for that
/// refresh token, so later calls fail at once without network until the token file changes
/// (a new sign-in); any other failure (network, 5xx, deadline) is forgotten at once: the
/// next call tries again and the session lives on.
actor CredentialCache {
    private let store: TokenStore
    private var cached: ActiveCredentials?
    private var inFlight: Task<ActiveCredentials, any Error>?
    /// The refresh token the server refused, and why.
    private var refused: (refreshToken: String, error: AuthError)?

    init(store: TokenStore) {
        self.store = store
    }

    /// The credentials on disk, re-read when the file changed; `signInRequired` if none.
    func current() throws(AuthError) -> ActiveCredentials {
        let stamp = store.stamp()
        if let cached, let stamp, cached.stamp == stamp { return cached }
        guard stamp != nil, let stored = try store.load() else {
            cached = nil
            throw AuthError(
                .signInRequired,
                "not signed in: no token file in \(store.directory.path)"
            )
        }
        let active = ActiveCredentials(
            credentials: stored,
            signer: RequestSigner(key: try stored.makeSigningKey()),
            stamp: stamp
        )
        cached = active
        return active
    }

    /// Replaces the cached credentials after a sign-in or refresh wrote them.
    func adopt(_ active: ActiveCredentials) {
        cached = active
        refused = nil
    }

    func forget() { cached = nil }

    /// Starts (or joins) the refresh that replaces `stale`; returns the task to await.
    /// - Throws: `signInRequired` at once when the server already refused `stale`'s refresh
    ///   token.
    func refreshTask(
        replacing stale: StoredCredentials,
        work: @escaping @Sendable (StoredCredentials) async throws(AuthError) -> ActiveCredentials
    ) throws(AuthError) -> Task<ActiveCredentials, any Error> {
        if let inFlight { return inFlight }
        if let refused, refused.refreshToken == stale.refreshToken { throw refused.error }
        let task = Task<ActiveCredentials, any Error> {
            let result: Result<ActiveCredentials, AuthError>
            do throws(AuthError) {
                result = .success(try await work(stale))
            } catch {
                result = .failure(error)
            }
            return try self.finished(result, stale: stale).get()
        }
        inFlight = task
        return task
    }

    /// Records the outcome: only a refusal sticks.
    private func finished(_ result: Result<ActiveCredentials, AuthError>, stale: StoredCredentials)
        -> Result<ActiveCredentials, AuthError>
    {
        inFlight = nil
        switch result {
        case .success(let active):
            adopt(active)
        case .failure(let error):
            if error.code == .signInRequired { refused = (stale.refreshToken, error) }
        }
        return result
    }
}

/// Waits for a task's value, but no later than a deadline and no longer than the caller
/// wants (cancellation); the task itself keeps running for its other waiters.
func awaitValue<T: Sendable>(
    of task: Task<T, any Error>,
    until deadline: ContinuousClock.Instant,
    what: String
)
    async throws(AuthError) -> T
{
    let box = OneShot<Result<T, AuthError>>()
    let result = await withTaskCancellationHandler {
        await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<T, AuthError>, Never>) in
            guard box.install(continuation) else { return }
            let waiter = Task {
                do {
                    box.finish(.success(try await task.value))
                } catch let error as AuthError {
                    box.finish(.failure(error))
                } catch {
                    box.finish(
                        .failure(
                            AuthError(
                                .invalidResponse,
                                "\(what) failed",
                                cause: TransportFailure(domain: "\(type(of: error))", code: 0)
                            )
                        )
                    )
                }
            }
            let timer = Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                if !Task.isCancelled {
                    box.finish(
                        .failure(
                            AuthError(
                                .deadlineExceeded,
                                "\(what) did not finish before the deadline"
                            )
                        )
                    )
                }
            }
            box.onFinish {
                waiter.cancel(); timer.cancel()
            }
        }
    } onCancel: {
        box.finish(.failure(AuthError(.cancelled, "\(what) was cancelled")))
    }
    return try result.get()
}

/// A continuation resumed exactly once by whichever outcome arrives first.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var value: Value?
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Mutex<State>(State())

    func install(_ continuation: CheckedContinuation<Value, Never>) -> Bool {
        let early: Value? = state.withLock { state in
            if let value = state.value { return value }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early); return false }
        return true
    }

    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state in
            if state.value != nil { return true }
            state.cleanup = cleanup
            return false
        }
        if runNow { cleanup() }
    }

    func finish(_ value: Value) {
        let (continuation, cleanup): (CheckedContinuation<Value, Never>?, (@Sendable () -> Void)?) =
            state.withLock { state in
                guard state.value == nil else { return (nil, nil) }
                state.value = value
                defer { state.continuation = nil; state.cleanup = nil }
                return (state.continuation, state.cleanup)
            }
        cleanup?()
        continuation?.resume(returning: value)
    }
}
