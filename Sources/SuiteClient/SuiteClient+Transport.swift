internal import Auth
internal import Foundation
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

extension SuiteClient {
    // MARK: Plumbing

    /// Time left before the command's deadline (never negative).
    public var remainingTime: Duration {
        max(.zero, end - ContinuousClock.now)
    }

    /// The longest answer to an unsigned request (the client configuration) that is read.
    static let maxPublicResponseBytes = 16 << 20

    /// Whether requests go over ``SocketTransport`` instead of URLSession: every plain-http
    /// server, whatever the proxy variables say (a proxy never carries plain http with
    /// credentials; a server on this machine is never reached through one).
    var usesSocketTransport: Bool { SocketTransport.serves(server.url) }

    var auth: AuthClient {
        authClient.withLock { client in
            if let client { return client }
            let authConfiguration = AuthClientConfiguration(
                serverURL: server.url,
                deadline: configuration.deadline
            )
            let made =
                usesSocketTransport
                ? AuthClient(
                    configuration: authConfiguration,
                    store: tokens,
                    transport: socketTransport,
                    logger: logger
                )
                : AuthClient(configuration: authConfiguration, store: tokens, logger: logger)
            client = made
            return made
        }
    }

    /// The plain-http transport, keeping the connect timeout on its own connections and
    /// telling ``Reachability`` what the first one found (no probe connection).
    var socketTransport: SocketTransport {
        let reachability = self.reachability
        return SocketTransport(connectTimeout: configuration.connectTimeout) { outcome in
            reachability.report(outcome)
        }
    }

    /// The suite's URLSession bridge for unsigned requests (made on first use). URLSession's
    /// idle timeout is the command's whole deadline, so it never cuts a slow answer short; the
    /// deadline itself and the connect timeout are enforced here.
    var plain: URLSessionHTTPTransport {
        plainTransport.withLock { transport in
            if let transport { return transport }
            let session = URLSessionConfiguration.ephemeral
            let seconds = max(1, Double(configuration.deadline.components.seconds) + 1)
            session.timeoutIntervalForRequest = seconds
            session.timeoutIntervalForResource = seconds
            let made = URLSessionHTTPTransport(configuration: session)
            transport = made
            return made
        }
    }

    private enum RaceOutcome<Value: Sendable>: Sendable {
        case done(Result<Value, SuiteClientError>)
        case reachable
        case unreachable(String)
        case deadline
    }

    /// Runs `operation` against the connect probe and the command's deadline: whichever
    /// says no first cancels it.
    func raced<Value: Sendable>(
        _ operation: @escaping @Sendable () async throws(SuiteClientError) -> Value
    ) async throws(SuiteClientError) -> Value {
        if let outcome = reachability.outcome, case .unreachable(let reason) = outcome {
            throw offline(reason)
        }
        let end = self.end
        let reachability = self.reachability
        let deadline = configuration.deadline
        let result: Result<Value, SuiteClientError> = await withTaskGroup(
            of: RaceOutcome<Value>.self
        ) { group in
            group.addTask {
                do throws(SuiteClientError) {
                    return .done(.success(try await operation()))
                } catch {
                    return .done(.failure(error))
                }
            }
            group.addTask {
                switch await reachability.wait() {
                case .unreachable(let reason): return .unreachable(reason)
                case .reachable, nil: return .reachable
                }
            }
            group.addTask {
                do { try await Task.sleep(until: end, clock: .continuous) } catch {
                    return .reachable  // cancelled: the operation finished
                }
                return .deadline
            }
            // A connection failure waits for the probe (refused is known at once, silence
            // at the connect timeout), whose reason is the one people can act on.
            var failure: SuiteClientError?
            var reachable = false
            while let next = await group.next() {
                switch next {
                case .done(.failure(let error))
                where error.code == .offline && error.status == nil && !reachable:
                    failure = error
                case .done(let result):
                    group.cancelAll()
                    return result
                case .reachable:
                    reachable = true
                    if let failure {
                        group.cancelAll()
                        return .failure(failure)
                    }
                case .unreachable(let reason):
                    group.cancelAll()
                    return .failure(offline(reason))
                case .deadline:
                    group.cancelAll()
                    return .failure(
                        failure
                            ?? SuiteClientError(
                                .offline,
                                "the server at \(server) did not answer within \(ConnectProbe.describe(deadline))"
                            )
                    )
                }
            }
            return .failure(failure ?? SuiteClientError(.cancelled, "cancelled"))
        }
        if case .failure(let error) = result, error.code == .cancelled,
            let outcome = reachability.outcome, case .unreachable(let reason) = outcome
        {
            throw offline(reason)
        }
        return try result.get()
    }

    private func offline(_ reason: String) -> SuiteClientError {
        SuiteClientError(.offline, "the server at \(server) cannot be reached (\(reason))")
    }

    /// Auth's errors as the suite's.
    static func map(_ error: AuthError, app: String) -> SuiteClientError {
        switch error.code {
        case .signInRequired:
            SuiteClientError(
                .signInRequired,
                "sign-in required: \(error.message) (run `\(app) login`)",
                status: error.status,
                cause: error
            )
        case .invalidCredentials:
            SuiteClientError(
                .signInRequired,
                "sign-in refused: wrong user name or password",
                status: error.status,
                cause: error
            )
        case .deadlineExceeded, .transport:
            SuiteClientError(.offline, error.message, status: error.status, cause: error)
        case .cancelled:
            SuiteClientError(.cancelled, error.message, cause: error)
        case .tokenStore:
            SuiteClientError(.storage, error.message, cause: error)
        case .originMismatch:
            // Auth's own guard behind checkSession(): nothing was sent.
            SuiteClientError(
                .signInRequired,
                "\(error.message) (run `\(app) login --server URL`)",
                status: error.status,
                cause: error
            )
        case .insecureTransport:
            // The server URL is the problem: credentials need https off this machine.
            SuiteClientError(.invalidInput, error.message, cause: error)
        case .invalidRequest:
            SuiteClientError(.invalidInput, error.message, cause: error)
        case .untrustedServer:
            SuiteClientError(.server, error.message, cause: error)
        case .invalidResponse, .invalidPasswordHash:
            if error.status == 429 {
                SuiteClientError(
                    .rateLimited,
                    // Failures or attempts at once: the server counts both (docs/API.md).
                    "too many sign-in attempts; try again "
                        + (error.retryAfter.map { "in \(Self.describeWait($0))" } ?? "later"),
                    status: 429,
                    cause: error
                )
            } else if let status = error.status, [502, 503, 504].contains(status) {
                SuiteClientError(.offline, error.message, status: status, cause: error)
            } else {
                SuiteClientError(.server, error.message, status: error.status, cause: error)
            }
        }
    }

    /// A wait in words, rounded up as people read it: `40 seconds`, `15 minutes`,
    /// `1 hour 5 minutes` (a `Retry-After` of 897 s is "15 minutes").
    public static func describeWait(_ wait: Duration) -> String {
        let seconds = max(
            0,
            Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0)
        )
        func unit(_ count: Int, _ name: String) -> String {
            "\(count) \(name)\(count == 1 ? "" : "s")"
        }
        if seconds < 60 { return unit(seconds, "second") }
        let minutes = (seconds + 59) / 60
        if minutes < 60 { return unit(minutes, "minute") }
        let hours = minutes / 60
        let rest = minutes % 60
        return rest == 0 ? unit(hours, "hour") : unit(hours, "hour") + " " + unit(rest, "minute")
    }
}
