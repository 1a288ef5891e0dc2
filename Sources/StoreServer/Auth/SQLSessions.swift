public import Auth
public import Foundation
internal import Logging
internal import SQLKit

/// Auth's `SessionStore` on the server's database (`auth_sessions`, `auth_tokens`), so every
/// instance sees the same sessions, signing keys, rotations and revocations, and they survive
/// a restart. Each method is one statement or one transaction.
///
/// Signing-key secrets are stored in base64 (the verifier needs them for every request):
/// protect the database like a credential store.
public final class SQLSessionStore: SessionStore {
    let database: StoreDatabase

    /// A store on `database` (migrated).
    public init(database: StoreDatabase) { self.database = database }

    /// See ``SessionStore/insert(session:tokens:)``.
    public func insert(session: SessionRecord, tokens: [TokenRecord]) async throws {
        let secret = session.signingKey.withSecretBytes { Data($0).base64EncodedString() }
        try await database.transaction { sql in
            try await sql.raw(
                """
                INSERT INTO auth_sessions (id, subject, key_id, key_secret, created_at, revoked_at)
                VALUES (\(bind: session.id), \(bind: session.subject), \(bind: session.signingKey.id), \(bind: secret),
                        \(bind: DBTime.millis(session.createdAt)), \(bind: session.revokedAt.map(DBTime.millis)))
                """
            ).run()
            try await Self.insert(tokens, on: sql)
        }
    }

    /// See ``SessionStore/insert(tokens:)``.
    public func insert(tokens: [TokenRecord]) async throws {
        if tokens.count == 1 {
            try await Self.insert(tokens, on: database.sql)
        } else {
            try await database.transaction { sql in try await Self.insert(tokens, on: sql) }
        }
    }

    private static func insert(_ tokens: [TokenRecord], on sql: any SQLDatabase) async throws {
        for token in tokens {
            try await sql.raw(
                """
                INSERT INTO auth_tokens (digest, session_id, kind, expires_at, rotated_at)
                VALUES (\(bind: token.digest), \(bind: token.sessionID), \(bind: token.kind.rawValue),
                        \(bind: DBTime.millis(token.expiresAt)), \(bind: token.rotatedAt.map(DBTime.millis)))
                """
            ).run()
        }
    }

    /// See ``SessionStore/session(id:)``.
    public func session(id: String) async throws -> SessionRecord? {
        guard
            let row = try await database.sql.raw(
                "SELECT id, subject, key_id, key_secret, created_at, revoked_at FROM auth_sessions WHERE id = \(bind: id)"
            ).first()
        else { return nil }
        return try Self.session(row)
    }

    private static func session(_ row: any SQLRow) throws -> SessionRecord {
        let id = try row.string("id")
        guard let secret = Data(base64Encoded: try row.string("key_secret")) else {
            throw StoredDataError("session \(id) has an unreadable signing key")
        }
        return SessionRecord(
            id: id,
            subject: try row.string("subject"),
            signingKey: try SigningKey(id: row.string("key_id"), secret: secret),
            createdAt: try row.instant("created_at"),
            revokedAt: try row.optionalInt("revoked_at").map(DBTime.date)
        )
    }

    /// See ``SessionStore/token(digest:)``.
    public func token(digest: String) async throws -> TokenRecord? {
        guard
            let row = try await database.sql.raw(
                "SELECT digest, session_id, kind, expires_at, rotated_at FROM auth_tokens WHERE digest = \(bind: digest)"
            ).first()
        else { return nil }
        return try Self.token(row)
    }

    private static func token(_ row: any SQLRow) throws -> TokenRecord {
        guard let kind = TokenRecord.Kind(rawValue: try row.string("kind")) else {
            throw StoredDataError("token kind '\(try row.string("kind"))' is unknown")
        }
        return TokenRecord(
            digest: try row.string("digest"),
            sessionID: try row.string("session_id"),
            kind: kind,
            expiresAt: try row.instant("expires_at"),
            rotatedAt: try row.optionalInt("rotated_at").map(DBTime.date)
        )
    }

    /// The token, its session and the session's user with their stores: what a signed
    /// request's gate reads first (one row per store; the user's columns are NULL when the
    /// session or the user is gone).
    static let tokenWithAccessSelect =
        "SELECT \(tokenWithAccessColumns) FROM auth_tokens t \(tokenWithAccessJoins)"

    /// The columns of ``tokenWithAccessSelect`` (`t` the token).
    static let tokenWithAccessColumns = """
        t.digest, t.session_id, t.kind, t.expires_at, t.rotated_at,
        s.id, s.subject, s.key_id, s.key_secret, s.created_at, s.revoked_at,
        u.username AS u_username, u.role AS u_role, u.home_store_id AS u_home_store_id,
        us.store_id AS us_store_id
        """

    /// The joins of ``tokenWithAccessSelect`` from the token `t`.
    static let tokenWithAccessJoins = """
        LEFT JOIN auth_sessions s ON s.id = t.session_id
        LEFT JOIN users u ON u.username = s.subject
        LEFT JOIN user_stores us ON us.username = u.username
        """

    /// The token and its session in rows of ``tokenWithAccessColumns``; nil when there is no
    /// token (no rows, or a row whose token columns are NULL), no session when it is gone.
    static func tokenWithSession(fromRows rows: [any SQLRow]) throws
        -> (TokenRecord, SessionRecord?)?
    {
        guard let row = rows.first, try row.optionalString("digest") != nil else { return nil }
        let token = try Self.token(row)
        guard try row.optionalString("id") != nil else { return (token, nil) }
        return (token, try Self.session(row))
    }

    /// See ``SessionStore/tokenWithSession(digest:)``: one statement, the token joined with
    /// its session (each signed request reads both) and the session's user with their
    /// stores. Inside ``AccessPrefetch/withPrefetch(_:)`` (a signed request's gate) the
    /// user's role and stores are left in the prefetch: the gate needs no statement of its
    /// own for them.
    public func tokenWithSession(digest: String) async throws -> (TokenRecord, SessionRecord?)? {
        let rows = try await tokenWithAccessRows(digest: digest)
        guard let (token, session) = try Self.tokenWithSession(fromRows: rows) else { return nil }
        if let session, let prefetch = AccessPrefetch.current {
            prefetch.set(try UserRepository.access(fromAccessRows: rows), of: session.subject)
        }
        return (token, session)
    }

    /// The token with `digest`, its session and the session's user with their stores, one
    /// row per store (no rows without the token).
    func tokenWithAccessRows(digest: String) async throws -> [any SQLRow] {
        try await database.rows(
            PreparedStatements.TokenWithSessionAndAccess(digest: digest),
            otherwise: """
                \(unsafeRaw: Self.tokenWithAccessSelect)
                WHERE t.digest = \(bind: digest) ORDER BY us.store_id
                """
        )
    }

    /// See ``SessionStore/markRotated(digest:at:)``.
    public func markRotated(digest: String, at now: Date) async throws -> Date {
        // Compare-and-set: of concurrent callers in any process, one sets the time.
        try await database.sql.raw(
            "UPDATE auth_tokens SET rotated_at = \(bind: DBTime.millis(now)) WHERE digest = \(bind: digest) AND rotated_at IS NULL"
        ).run()
        guard
            let row = try await database.sql.raw(
                "SELECT rotated_at FROM auth_tokens WHERE digest = \(bind: digest)"
            ).first(),
            let rotated = try row.optionalInt("rotated_at")
        else {
            throw StoredDataError("no refresh token with that digest")
        }
        return DBTime.date(rotated)
    }

    /// See ``SessionStore/revoke(sessionID:at:)``.
    public func revoke(sessionID: String, at now: Date) async throws {
        try await database.sql.raw(
            "UPDATE auth_sessions SET revoked_at = \(bind: DBTime.millis(now)) WHERE id = \(bind: sessionID) AND revoked_at IS NULL"
        ).run()
    }

    /// See ``SessionStore/purge(expiredBefore:)``.
    public func purge(expiredBefore date: Date) async throws {
        try await database.sql.raw(
            "DELETE FROM auth_tokens WHERE expires_at < \(bind: DBTime.millis(date))"
        ).run()
        try await database.sql.raw(
            "DELETE FROM auth_sessions WHERE NOT EXISTS (SELECT 1 FROM auth_tokens t WHERE t.session_id = auth_sessions.id)"
        ).run()
    }

    /// Revokes every open session of `subject` (password change, user removal).
    static func revokeAll(subject: String, database: StoreDatabase, now: Date = Date()) async throws
    {
        try await database.sql.raw(
            "UPDATE auth_sessions SET revoked_at = \(bind: DBTime.millis(now)) WHERE subject = \(bind: subject) AND revoked_at IS NULL"
        ).run()
    }
}

/// Auth's `NonceStore` on the server's database (`auth_nonces`): one replay window for every
/// instance, kept across restarts.
///
/// `record` is one statement: `INSERT … ON CONFLICT (key_id, nonce) DO UPDATE … WHERE the
/// old entry expired … RETURNING`, so of concurrent requests with one nonce, in any process,
/// exactly one gets a row back (`recorded`). The table has no quota, so it never answers
/// `refused`; housekeeping deletes expired entries.
///
/// On PostgreSQL the table is UNLOGGED (migration 500): recording a nonce writes no WAL and
/// waits for no disk flush, the cost of a signed request that used to dominate it. A clean
/// restart keeps an unlogged table; a crash of the database (or a failover to a replica)
/// empties it, and with it the one-row table `auth_replay_floor`, also unlogged. The same
/// statement that records a nonce reads the floor: when it is gone, the window was lost, and
/// the store sets a new floor at the database's time plus the verifier's future allowance.
/// A signature whose `created` lies before the floor is answered 503 (`Retry-After`: the
/// client signs again), never accepted: a nonce lost in the crash was signed before it, so it
/// can never be replayed. SQLite keeps the table in its (durable) file.
public final class SQLNonceStore: NonceStore {
    let database: StoreDatabase
    /// Seconds a signature's `created` may lie ahead of the database's time (the verifier's
    /// future allowance): a new floor lies this far ahead of the time it is set.
    let futureWindow: Int64

    /// The replay window was lost (a database crash emptied the unlogged nonce table) after
    /// this signature was made: it is refused with a 503 and the client signs again.
    struct SignedBeforeReset: Error, CustomStringConvertible {
        var description: String {
            "the replay window was reset by a database restart after this signature was made"
        }
    }

    /// A store on `database` (migrated); `futureWindow` as the verifier's.
    public init(database: StoreDatabase, futureWindow: Int64 = 30) {
        self.database = database
        self.futureWindow = futureWindow
    }

    /// See ``NonceStore/record(keyID:nonce:created:expiresAt:now:)``.
    public func record(keyID: String, nonce: String, created: Int64, expiresAt: Int64, now: Int64)
        async throws -> NonceOutcome
    {
        guard database.kind == .postgres else {
            let rows = try await database.write {
                try await database.sql.raw(
                    """
                    INSERT INTO auth_nonces (key_id, nonce, created, expires_at)
                    VALUES (\(bind: keyID), \(bind: nonce), \(bind: created), \(bind: expiresAt))
                    ON CONFLICT (key_id, nonce) DO UPDATE SET created = EXCLUDED.created, expires_at = EXCLUDED.expires_at
                    WHERE auth_nonces.expires_at < \(bind: now)
                    RETURNING key_id
                    """
                ).all()
            }
            return rows.isEmpty ? .replay : .recorded
        }
        let statement = PreparedStatements.RecordNonce(
            keyID: keyID,
            nonce: nonce,
            created: created,
            expiresAt: expiresAt,
            now: now
        )
        let recheck = TokenRecheck.current
        for attempt in 0..<2 {
            // A signed request whose key came from ``SessionKeyCache``: the same statement
            // reads the token, its session and the user's access again (``TokenRecheck``).
            // Nil inside a unit of work: the plain statement runs and the gate reads them itself.
            var rows: [any SQLRow]?
            if let recheck {
                rows = try await database.prepared(
                    PreparedStatements.RecordNonceReadingToken(
                        record: statement,
                        digest: recheck.digest
                    )
                )
                if let rows { recheck.set(rows) }
            }
            // One round trip: the floor, and the nonce recorded only when signed after it.
            if rows == nil {
                rows = try await database.rows(
                    statement,
                    otherwise: """
                        WITH floor AS (SELECT since FROM auth_replay_floor WHERE id = 1),
                        recorded AS (
                            INSERT INTO auth_nonces (key_id, nonce, created, expires_at)
                            SELECT \(bind: keyID), \(bind: nonce), \(bind: created), \(bind: expiresAt)
                            FROM floor WHERE floor.since <= \(bind: created * 1000)
                            ON CONFLICT (key_id, nonce) DO UPDATE SET created = EXCLUDED.created, expires_at = EXCLUDED.expires_at
                            WHERE auth_nonces.expires_at < \(bind: now)
                            RETURNING 1 AS one)
                        SELECT (SELECT since FROM floor) AS since, (SELECT COUNT(*) FROM recorded) AS recorded
                        """
                )
            }
            guard let row = rows?.first, let since = try row.optionalInt("since") else {
                if attempt == 0 { try await setFloor() }
                continue
            }
            if created * 1000 < since { throw SignedBeforeReset() }
            return try row.int("recorded") > 0 ? .recorded : .replay
        }
        throw SignedBeforeReset()
    }

    /// Sets the floor after the unlogged tables were emptied (the first caller's wins).
    private func setFloor() async throws {
        try await database.sql.raw(
            """
            INSERT INTO auth_replay_floor (id, since)
            VALUES (1, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) + \(bind: futureWindow * 1000))
            ON CONFLICT (id) DO NOTHING
            """
        ).run()
        database.logger.warning(
            "the replay window was emptied by a database crash or failover: signatures made before now are refused"
        )
    }

    /// The earliest signature time (Unix milliseconds) accepted, or nil when the window is
    /// durable (SQLite) or was just emptied (PostgreSQL, until the next signed request).
    func floor() async throws -> Int64? {
        guard database.kind == .postgres else { return nil }
        return try await database.sql.raw("SELECT since FROM auth_replay_floor WHERE id = 1")
            .first()?.int("since")
    }

    /// Deletes entries whose window has passed.
    func purge(now: Int64) async throws {
        try await database.sql.raw("DELETE FROM auth_nonces WHERE expires_at < \(bind: now)").run()
    }
}

/// The old name used by the admin commands.
typealias SQLSessions = SQLSessionStore
