internal import SQLiteKit
internal import Synchronization

/// How many connections are out of a pool (taken before the request, given back after the
/// release).
final class InUseCount: Sendable {
    private let value = Atomic<Int>(0)

    var count: Int { value.load(ordering: .acquiring) }
    func take() { value.add(1, ordering: .relaxed) }
    func giveBack() { value.subtract(1, ordering: .releasing) }
}

/// The SQLite connections a pool's source opened, and the openings under way. A connection
/// closes on the SQLite thread pool; ``StoreDatabase/shutdown()`` stops that pool only once
/// this is settled, or a connection that finished opening (or came back) after the pool
/// closed would keep its handle open.
final class SQLiteConnectionTracker: Sendable {
    private struct Made: Sendable {
        weak var connection: SQLiteConnection?
    }

    private struct State: Sendable {
        var opening = 0
        var made: [Made] = []
    }

    private let state = Mutex(State())

    /// An opening starts.
    func opening() { state.withLock { $0.opening += 1 } }

    /// An opening gave `connection`.
    func made(_ connection: SQLiteConnection) {
        state.withLock { state in
            state.made.removeAll { $0.connection?.isClosed ?? true }
            state.made.append(Made(connection: connection))
        }
    }

    /// Openings under way.
    var openings: Int { state.withLock { $0.opening } }

    /// An opening ended, with a connection or an error.
    func opened() { state.withLock { $0.opening -= 1 } }

    /// No opening under way and every connection opened closed.
    var settled: Bool {
        state.withLock { state in
            state.opening == 0 && state.made.allSatisfy { $0.connection?.isClosed ?? true }
        }
    }
}
