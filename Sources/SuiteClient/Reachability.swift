internal import Foundation
internal import Synchronization

/// Whether the server could be connected to, once per client and shared by every request of
/// the command. Over URLSession a connect probe finds out, started by the first wait (see
/// ``ConnectProbe``); over ``SocketTransport`` the requests' own connections do, which keep
/// the connect timeout themselves and ``report(_:)`` what the first one found, so no
/// connection is opened for the probe alone. Waiting is cancellable: a request that finishes
/// first never waits.
final class Reachability: Sendable {
    private enum State {
        case idle
        case probing([Int: CheckedContinuation<ConnectProbe.Outcome?, Never>])
        case done(ConnectProbe.Outcome)
    }

    private let host: String
    private let port: Int
    private let timeout: Duration
    private let enabled: Bool
    private let reportedByRequests: Bool
    private let state = Mutex<State>(.idle)
    private let nextWaiter = Atomic<Int>(0)

    /// - Parameters:
    ///   - enabled: false when a proxy is configured (the server's address is then not the
    ///     one to connect to); every wait then answers `reachable`.
    ///   - reportedByRequests: true when every request's transport keeps the connect timeout
    ///     and reports its connection (``SocketTransport``): no probe is started.
    init(host: String, port: Int, timeout: Duration, enabled: Bool, reportedByRequests: Bool) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.enabled = enabled
        self.reportedByRequests = reportedByRequests
    }

    /// The probe's outcome once known; nil when the calling task is cancelled first.
    func wait() async -> ConnectProbe.Outcome? {
        guard enabled else { return .reachable }
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<ConnectProbe.Outcome?, Never>) in
                enum Action { case resume(ConnectProbe.Outcome?), start, none }
                let action: Action = state.withLock { state in
                    if Task.isCancelled { return .resume(nil) }
                    switch state {
                    case .done(let outcome):
                        return .resume(outcome)
                    case .idle:
                        state = .probing([id: continuation])
                        return reportedByRequests ? .none : .start
                    case .probing(var waiters):
                        waiters[id] = continuation
                        state = .probing(waiters)
                        return .none
                    }
                }
                switch action {
                case .resume(let outcome): continuation.resume(returning: outcome)
                case .start: start()
                case .none: break
                }
            }
        } onCancel: {
            let waiter: CheckedContinuation<ConnectProbe.Outcome?, Never>? = state.withLock {
                state in
                guard case .probing(var waiters) = state else { return nil }
                let waiter = waiters.removeValue(forKey: id)
                state = .probing(waiters)
                return waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// The outcome if the probe has finished.
    var outcome: ConnectProbe.Outcome? {
        state.withLock { state in
            if case .done(let outcome) = state { return outcome }
            return nil
        }
    }

    /// Records what a connection to the server found; the first outcome stays (as the
    /// probe's would), later ones are ignored.
    func report(_ outcome: ConnectProbe.Outcome) {
        let waiters: [CheckedContinuation<ConnectProbe.Outcome?, Never>] = state.withLock {
            state in
            switch state {
            case .done:
                return []
            case .idle:
                state = .done(outcome)
                return []
            case .probing(let waiters):
                state = .done(outcome)
                return Array(waiters.values)
            }
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    private func start() {
        let (host, port, timeout) = (self.host, self.port, self.timeout)
        Task.detached { [self] in
            report(await ConnectProbe.run(host: host, port: port, timeout: timeout))
        }
    }

    /// Whether the environment routes requests through a proxy.
    static func proxyConfigured(_ environment: [String: String]) -> Bool {
        ["http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
            .contains { environment[$0].map { !$0.isEmpty } ?? false }
    }
}
