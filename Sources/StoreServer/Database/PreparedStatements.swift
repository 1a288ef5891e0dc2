internal import Foundation
internal import Logging
internal import NIOCore
internal import PostgresKit
internal import SQLKit

/// The statements every signed request runs, as PostgreSQL named prepared statements: each is
/// parsed and planned once per connection (PostgresNIO prepares it on first use and keeps it
/// for the connection's life), then sent as Bind and Execute only. Through SQLKit every
/// statement is an unnamed one, parsed and planned again each time; at a thousand signed
/// requests a second that was PostgreSQL's main cost.
///
/// The SQL is the same as the SQLKit forms beside each caller, which SQLite (and PostgreSQL
/// inside a unit of work) still run. A change to one needs the same change to the other.
enum PreparedStatements {
    /// A statement whose rows are read as SQLKit rows, so callers share their row readers
    /// with the SQLKit path.
    protocol Statement: PostgresPreparedStatement where Row == PostgresRow {}

    /// The token with its session and the session's user's role and stores, one row per
    /// store (``SQLSessionStore/tokenWithSession(digest:)``).
    struct TokenWithSessionAndAccess: Statement {
        static let name = "shopfloor_token_with_session_and_access_v1"
        static let sql =
            SQLSessionStore.tokenWithAccessSelect + " WHERE t.digest = $1 ORDER BY us.store_id"
        var digest: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(digest)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// Records a nonce unless signed before the replay floor
    /// (``SQLNonceStore/record(keyID:nonce:created:expiresAt:now:)``).
    struct RecordNonce: Statement {
        static let name = "shopfloor_record_nonce_v1"
        static let sql = """
            \(recording)
            SELECT (SELECT since FROM floor) AS since, (SELECT COUNT(*) FROM recorded) AS recorded
            """
        /// The floor and the nonce recorded ($1-$6), for the statements' SELECT.
        static let recording = """
            WITH floor AS (SELECT since FROM auth_replay_floor WHERE id = 1),
            recorded AS (
                INSERT INTO auth_nonces (key_id, nonce, created, expires_at)
                SELECT $1, $2, $3, $4
                FROM floor WHERE floor.since <= $5
                ON CONFLICT (key_id, nonce) DO UPDATE SET created = EXCLUDED.created, expires_at = EXCLUDED.expires_at
                WHERE auth_nonces.expires_at < $6
                RETURNING 1 AS one)
            """
        var keyID: String
        var nonce: String
        var created: Int64
        var expiresAt: Int64
        var now: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 6)
            bindings.append(keyID)
            bindings.append(nonce)
            bindings.append(created)
            bindings.append(expiresAt)
            bindings.append(created * 1000)
            bindings.append(now)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// ``RecordNonce`` that also reads the token `$7` with its session and the session's
    /// user's role and stores, one row per store (at least one row: the token's columns are
    /// NULL when it is gone). A signed request whose signing key was cached
    /// (``SessionKeyCache``) runs this one statement where it would run two.
    struct RecordNonceReadingToken: Statement {
        static let name = "shopfloor_record_nonce_reading_token_v1"
        static let sql = """
            \(RecordNonce.recording)
            SELECT (SELECT since FROM floor) AS since, (SELECT COUNT(*) FROM recorded) AS recorded,
                   \(SQLSessionStore.tokenWithAccessColumns)
            FROM (SELECT 1 AS one) o LEFT JOIN auth_tokens t ON t.digest = $7
            \(SQLSessionStore.tokenWithAccessJoins)
            ORDER BY us.store_id
            """
        var record: RecordNonce
        var digest: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = try record.makeBindings()
            bindings.append(digest)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// A user with their stores, one row per store (``UserRepository/user(_:)``).
    struct UserWithStores: Statement {
        static let name = "shopfloor_user_with_stores_v1"
        static let sql = """
            SELECT \(UserRepository.columns) FROM users u LEFT JOIN user_stores us ON us.username = u.username
            WHERE u.username = $1 ORDER BY us.store_id
            """
        var username: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(username)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// A reservation by its confirmation code within a scope
    /// (``Repository/reservation(code:scope:)``): every store, or the stores in `$3` (one
    /// statement for any number of them, where SQLKit's `IN` list makes one per count).
    struct ReservationByCode: Statement {
        static let name = "shopfloor_reservation_by_code_v1"
        static let sql =
            ModelRows.detailSelect + " WHERE r.code = $1 AND ($2 OR r.store_id = ANY($3))"
        var code: String
        var everyStore: Bool
        var stores: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(code)
            bindings.append(everyStore)
            bindings.append(stores)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }
}

extension PreparedStatements {
    /// Runs each statement above once on `connection`, with values that match no row and
    /// record nothing (an empty token digest, user name and code; a nonce signed before any
    /// replay floor), so PostgreSQL has parsed and planned every one, and loaded the catalog
    /// entries they read, before a request waits on this connection. Run on the pool's
    /// connections as the server starts (``StoreDatabase/openAllConnections()``), directly on
    /// the connection: injected faults (tests) count requests' statements only.
    static func warmUp(_ connection: PostgresConnection, logger: Logger) async throws {
        func run(_ statement: some Statement) async throws {
            for try await _ in try await connection.execute(statement, logger: logger) {}
        }
        let nothing = RecordNonce(keyID: "", nonce: "", created: -1, expiresAt: 0, now: 0)
        try await run(nothing)
        try await run(RecordNonceReadingToken(record: nothing, digest: ""))
        try await run(TokenWithSessionAndAccess(digest: ""))
        try await run(UserWithStores(username: ""))
        try await run(ReservationByCode(code: "", everyStore: false, stores: []))
    }
}

extension StoreDatabase {
    /// Runs `statement` as a named prepared statement on a pooled PostgreSQL connection and
    /// returns its rows; nil on SQLite and inside a unit of work (the unit's own connection
    /// and transaction), where the caller runs its SQLKit form instead.
    ///
    /// Injected faults (tests) see the statement's SQL as they see every other statement's.
    func prepared<S: PreparedStatements.Statement>(_ statement: S) async throws -> [any SQLRow]? {
        guard case .postgres(let pool) = self.pool, currentUnit == nil else { return nil }
        if let faults, faults.fails(S.sql) { throw InjectedFault() }
        let connection = try await pool.requestConnection(logger: poolLogger).get()
        defer { pool.releaseConnection(connection, logger: poolLogger) }
        var rows: [any SQLRow] = []
        for try await row in try await connection.execute(statement, logger: poolLogger) {
            rows.append(PostgresStatementRow(row))
        }
        return rows
    }

    /// The rows of `statement` prepared on PostgreSQL (outside a unit of work), else of
    /// `query` through SQLKit: the same SQL in SQLKit's form.
    func rows<S: PreparedStatements.Statement>(
        _ statement: S,
        otherwise query: @autoclosure () -> SQLQueryString
    ) async throws -> [any SQLRow] {
        if let rows = try await prepared(statement) { return rows }
        return try await sql.raw(query()).all()
    }

    /// PostgreSQL: opens every connection of the pool now, all at once, and runs the signed
    /// read's statements once on each (``PreparedStatements/warmUp(_:logger:)``), instead of
    /// the first requests finding the pool short (each new connection a PostgreSQL backend: a
    /// process start, a login, and every statement parsed and planned against a cold catalog
    /// cache, on the cores that serve the requests). Measured with `store-server-load.sh`, two
    /// fresh instances at 1,000 signed reads a second: p99 12.6 ms (max 71 ms) in the first
    /// 6 s against 2.6 ms in the next 6. A connection that cannot be opened now is left for
    /// the pool to open on demand, as before. SQLite: nothing to do.
    func openAllConnections() async {
        guard case .postgres(let groupPool) = pool, currentUnit == nil else { return }
        let (shared, logger) = (pool, poolLogger)
        let loops = Array(groupPool.eventLoopGroup.makeIterator())
        let perLoop = groupPool.maxConnectionsPerEventLoop
        // Every connection is held until all are open: one released early would be handed
        // to the next request of this loop instead of a new one being made.
        let opened = await withTaskGroup(of: (any EventLoop, PostgresConnection)?.self) { tasks in
            for loop in loops {
                for _ in 0..<perLoop {
                    tasks.addTask {
                        // The pool enum is Sendable, AsyncKit's pool type is not: unwrap here.
                        guard case .postgres(let groupPool) = shared,
                            let connection = try? await groupPool.pool(for: loop)
                                .requestConnection(logger: logger).get()
                        else { return nil }
                        try? await PreparedStatements.warmUp(connection, logger: logger)
                        return (loop, connection)
                    }
                }
            }
            var opened: [(any EventLoop, PostgresConnection)] = []
            for await entry in tasks { if let entry { opened.append(entry) } }
            return opened
        }
        for (loop, connection) in opened {
            groupPool.pool(for: loop).releaseConnection(connection, logger: logger)
        }
        self.logger.debug("opened the database pool", metadata: ["connections": "\(opened.count)"])
    }
}
