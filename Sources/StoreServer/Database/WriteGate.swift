internal import Synchronization

/// The order in which this process's writers take SQLite's one write lock: first come, first
/// served, each waiting in memory for its turn. Without it, concurrent writers race for the
/// lock inside SQLite, and a loser sleeps in the busy handler (1, 2, 5, 10… ms) even when the
/// lock was free again after 50 µs: the tail latency of every signed request, each of which
/// writes its nonce. Writers in other processes (admin commands) still meet the busy timeout.
final class WriteGate: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var next = 0
    }
    private let state = Mutex(State())

    init() {}

    /// Runs `body` once every writer that came before has finished.
    func run<T>(_ body: () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                if state.busy {
                    state.waiting.append(continuation)
                    return false
                }
                state.busy = true
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    private func leave() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.next < state.waiting.count else {
                state.busy = false
                state.waiting.removeAll(keepingCapacity: true)
                state.next = 0
                return nil
            }
            let continuation = state.waiting[state.next]
            state.next += 1
            if state.next > 1_024 {
                state.waiting.removeFirst(state.next)
                state.next = 0
            }
            return continuation
        }
        next?.resume()
    }
}
