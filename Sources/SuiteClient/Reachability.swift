internal import Foundation
internal import Synchronization

/// One connect probe per client, started by the first request and shared by every request
/// of the command (see ``ConnectProbe``). Waiting is cancellable: a request that finishes
/// first never waits for the probe.
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
    private let state = Mutex<State>(.idle)
    private let nextWaiter = Atomic<Int>(0)

    /// - Parameter enabled: false when a proxy is configured (the server's address is then
    ///   not the one to connect to); every wait then answers `reachable`.
    init(host: String, port: Int, timeout: Duration, enabled: Bool) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.enabled = enabled
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
                        return .start
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

    private func start() {
        let (host, port, timeout) = (self.host, self.port, self.timeout)
        Task.detached { [self] in
            let outcome = await ConnectProbe.run(host: host, port: port, timeout: timeout)
            let waiters: [CheckedContinuation<ConnectProbe.Outcome?, Never>] = state.withLock {
                state in
                defer { state = .done(outcome) }
                if case .probing(let waiters) = state { return Array(waiters.values) }
                return []
            }
            for waiter in waiters { waiter.resume(returning: outcome) }
        }
    }

    /// Whether the environment routes requests through a proxy.
    static func proxyConfigured(_ environment: [String: String]) -> Bool {
        ["http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
            .contains { environment[$0].map { !$0.isEmpty } ?? false }
    }
}
