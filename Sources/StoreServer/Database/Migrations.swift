internal import Foundation
internal import Logging
internal import Models
internal import SQLKit

/// One versioned schema step. The SQL is written once for both databases: `{INT}` becomes
/// `INTEGER` (SQLite) or `BIGINT` (PostgreSQL) and `{BLOB}` becomes `BLOB` or `BYTEA`. A step
/// may end with Swift code (`then`) that runs in the same transaction, for data SQL alone
/// cannot derive.
struct Migration: Sendable {
    var version: Int
    var name: String
    var statements: [String]
    var then: (@Sendable (any SQLDatabase) async throws -> Void)? = nil
}

/// The server's schema history. Append new steps; never edit a released one.
enum Migrations {
    static let all: [Migration] = [
        Migration(
            version: 1,
            name: "stores, customers, reservations, products, users, configuration",
            statements: [
                """
                CREATE TABLE stores (
                    id TEXT PRIMARY KEY, name TEXT NOT NULL, time_zone TEXT NOT NULL,
                    market TEXT NOT NULL, region TEXT NOT NULL)
                """,
                """
                CREATE TABLE customers (
                    id TEXT PRIMARY KEY, version {INT} NOT NULL, given_name TEXT NOT NULL,
                    family_name TEXT NOT NULL, email TEXT, phone TEXT, note TEXT,
                    form_values TEXT, search_text TEXT NOT NULL,
                    created_at {INT} NOT NULL, updated_at {INT} NOT NULL)
                """,
                "CREATE INDEX customers_by_name ON customers (family_name, given_name, id)",
                """
                CREATE TABLE reservations (
                    id TEXT PRIMARY KEY, code TEXT NOT NULL UNIQUE, version {INT} NOT NULL,
                    status TEXT NOT NULL, starts_at {INT} NOT NULL, ends_at {INT} NOT NULL,
                    local_date TEXT NOT NULL, store_id TEXT NOT NULL REFERENCES stores (id),
                    customer_id TEXT NOT NULL REFERENCES customers (id),
                    party_size {INT} NOT NULL, topic TEXT NOT NULL, notes TEXT,
                    created_at {INT} NOT NULL, updated_at {INT} NOT NULL)
                """,
                "CREATE INDEX reservations_by_start ON reservations (starts_at, id)",
                "CREATE INDEX reservations_by_date ON reservations (local_date, starts_at, id)",
                "CREATE INDEX reservations_by_customer ON reservations (customer_id)",
                """
                CREATE TABLE products (
                    gtin TEXT PRIMARY KEY, sku TEXT NOT NULL, title TEXT NOT NULL, brand TEXT,
                    status TEXT NOT NULL, price_amount TEXT NOT NULL, price_currency TEXT NOT NULL,
                    search_text TEXT NOT NULL, has_image {INT} NOT NULL)
                """,
                """
                CREATE TABLE product_images (
                    gtin TEXT PRIMARY KEY REFERENCES products (gtin) ON DELETE CASCADE,
                    png {BLOB} NOT NULL, etag TEXT NOT NULL, updated_at {INT} NOT NULL)
                """,
                """
                CREATE TABLE users (
                    username TEXT PRIMARY KEY, display_name TEXT NOT NULL, home_store_id TEXT,
                    password_hash TEXT NOT NULL, created_at {INT} NOT NULL,
                    updated_at {INT} NOT NULL)
                """,
                """
                CREATE TABLE config_state (
                    id {INT} PRIMARY KEY, config_version TEXT NOT NULL, form_fields TEXT NOT NULL,
                    updated_at {INT} NOT NULL)
                """,
                """
                CREATE TABLE config_flags (
                    name TEXT NOT NULL, scope TEXT NOT NULL, target TEXT NOT NULL,
                    value TEXT NOT NULL, PRIMARY KEY (name, scope, target))
                """,
                """
                CREATE TABLE config_app_versions (
                    app TEXT PRIMARY KEY, minimum_version TEXT NOT NULL)
                """,
            ]
        ),
        Migration(
            version: 2,
            name: "shared state: sessions, tokens, nonces, idempotency keys, sign-in limits",
            statements: [
                """
                CREATE TABLE auth_sessions (
                    id TEXT PRIMARY KEY, subject TEXT NOT NULL, key_id TEXT NOT NULL,
                    key_secret TEXT NOT NULL, created_at {INT} NOT NULL, revoked_at {INT})
                """,
                """
                CREATE TABLE auth_tokens (
                    digest TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL,
                    expires_at {INT} NOT NULL, rotated_at {INT})
                """,
                "CREATE INDEX auth_tokens_by_session ON auth_tokens (session_id)",
                "CREATE INDEX auth_tokens_by_expiry ON auth_tokens (expires_at)",
                """
                CREATE TABLE auth_nonces (
                    key_id TEXT NOT NULL, nonce TEXT NOT NULL, created {INT} NOT NULL,
                    expires_at {INT} NOT NULL, PRIMARY KEY (key_id, nonce))
                """,
                "CREATE INDEX auth_nonces_by_expiry ON auth_nonces (expires_at)",
                """
                CREATE TABLE idempotency_keys (
                    subject TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
                    state TEXT NOT NULL, status {INT}, headers TEXT, body {BLOB},
                    created_at {INT} NOT NULL, locked_until {INT} NOT NULL,
                    PRIMARY KEY (subject, key))
                """,
                "CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at)",
                """
                CREATE TABLE signin_failures (
                    bucket TEXT PRIMARY KEY, failures {INT} NOT NULL,
                    window_start {INT} NOT NULL)
                """,
            ]
        ),
        Migration(
            version: 100,
            name: "idempotency records name the request that owns them",
            statements: ["ALTER TABLE idempotency_keys ADD COLUMN owner TEXT"]
        ),
        Migration(
            version: 200,
            name: "roles and stores of users, stores' short names, customers' stores",
            statements: [
                "ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'associate'",
                """
                CREATE TABLE user_stores (
                    username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
                    store_id TEXT NOT NULL REFERENCES stores (id),
                    PRIMARY KEY (username, store_id))
                """,
                "CREATE INDEX user_stores_by_store ON user_stores (store_id)",
                """
                INSERT INTO user_stores (username, store_id)
                SELECT u.username, u.home_store_id FROM users u JOIN stores s ON s.id = u.home_store_id
                """,
                "ALTER TABLE stores ADD COLUMN short_name TEXT",
                "ALTER TABLE customers ADD COLUMN store_id TEXT REFERENCES stores (id)",
                "CREATE INDEX customers_by_store ON customers (store_id)",
                "CREATE INDEX reservations_by_store ON reservations (store_id, starts_at, id)",
            ],
            then: { sql in
                for row in try await sql.raw("SELECT id, name FROM stores ORDER BY name, id").all()
                {
                    let name = try await Repository.freeShortName(
                        Store.shortName(for: row.string("name")),
                        on: sql
                    )
                    try await sql.raw(
                        "UPDATE stores SET short_name = \(bind: name) WHERE id = \(bind: try row.string("id"))"
                    ).run()
                }
                try await sql.raw("CREATE UNIQUE INDEX stores_by_short_name ON stores (short_name)")
                    .run()
            }
        ),
        Migration(
            version: 201,
            name: "sign-in attempts reserved per user and address, user, and address",
            statements: [
                """
                CREATE TABLE signin_attempts (
                    bucket TEXT PRIMARY KEY, failures {INT} NOT NULL, in_flight {INT} NOT NULL,
                    window_start {INT} NOT NULL, last_attempt {INT} NOT NULL)
                """,
                "CREATE INDEX signin_attempts_by_window ON signin_attempts (window_start)",
                "DROP TABLE signin_failures",
            ]
        ),
        Migration(
            version: 202,
            name: "server secrets shared by every instance",
            statements: ["CREATE TABLE server_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)"]
        ),
        Migration(
            version: 400,
            name: "stores' opening hours (JSON by weekday; NULL: any time)",
            statements: ["ALTER TABLE stores ADD COLUMN opening_hours TEXT"]
        ),
        Migration(
            version: 500,
            name: "PostgreSQL: the replay window unlogged, with the floor a crash resets",
            statements: [],
            then: { sql in
                // SQLite keeps the window in its file; the floor matters only where the
                // window can be emptied by a crash (see SQLNonceStore).
                guard sql.dialect.name == "postgresql" else { return }
                try await sql.raw("ALTER TABLE auth_nonces SET UNLOGGED").run()
                try await sql.raw(
                    "CREATE UNLOGGED TABLE auth_replay_floor (id INT PRIMARY KEY, since BIGINT NOT NULL)"
                ).run()
                // Nothing was lost so far (the table was logged): no signature is refused.
                try await sql.raw("INSERT INTO auth_replay_floor (id, since) VALUES (1, 0)").run()
            }
        ),
        Migration(
            version: 501,
            name: "SQLite: the replay window clustered on its key (WITHOUT ROWID)",
            statements: [],
            then: { sql in
                // Every signed request commits one nonce. In a rowid table that writes the
                // row, the primary key's index and the expiry index; clustered on the key it
                // writes two: 3.5 -> 2.6 WAL frames a commit, measured with SQLite 3.40.
                // PostgreSQL's heap has no rowid to drop.
                guard sql.dialect.name == "sqlite" else { return }
                try await sql.raw(
                    """
                    CREATE TABLE auth_nonces_clustered (
                        key_id TEXT NOT NULL, nonce TEXT NOT NULL, created INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL, PRIMARY KEY (key_id, nonce)) WITHOUT ROWID
                    """
                ).run()
                try await sql.raw(
                    """
                    INSERT INTO auth_nonces_clustered (key_id, nonce, created, expires_at)
                    SELECT key_id, nonce, created, expires_at FROM auth_nonces
                    """
                ).run()
                try await sql.raw("DROP TABLE auth_nonces").run()
                try await sql.raw("ALTER TABLE auth_nonces_clustered RENAME TO auth_nonces").run()
                try await sql.raw(
                    "CREATE INDEX auth_nonces_by_expiry ON auth_nonces (expires_at)"
                ).run()
            }
        ),
    ]

    /// The newest schema version this server knows.
    static var latest: Int { all.map(\.version).max() ?? 0 }

    /// Applies every pending step up to `version` (all of them by default; tests stop earlier
    /// to check a step on the data before it), each in its own transaction, and returns the
    /// versions applied. Several processes may call this at once: PostgreSQL serialises them
    /// with an advisory lock, SQLite with its write lock; a step applied meanwhile is skipped.
    @discardableResult
    static func run(on database: StoreDatabase, logger: Logger, upTo version: Int = .max)
        async throws -> [Int]
    {
        try await database.sql.raw(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version \(unsafeRaw: database.kind == .sqlite ? "INTEGER" : "BIGINT") PRIMARY KEY,
                name TEXT NOT NULL, applied_at \(unsafeRaw: database.kind == .sqlite ? "INTEGER" : "BIGINT") NOT NULL)
            """
        ).run()
        var applied: [Int] = []
        let current = try await currentVersion(database.sql)
        if current > latest {
            throw DatabaseError(
                .schemaTooNew,
                "database '\(database.location)' has schema version \(current), newer than this server's \(latest); run a newer store-server"
            )
        }
        for migration in all where migration.version > current && migration.version <= version {
            let didApply: Bool = try await database.transaction { sql in
                if database.kind == .postgres {
                    try await sql.raw("SELECT pg_advisory_xact_lock(7343002)").run()
                }
                guard try await currentVersion(sql) < migration.version else { return false }
                for statement in migration.statements {
                    let text =
                        statement
                        .replacingOccurrences(
                            of: "{INT}",
                            with: database.kind == .sqlite ? "INTEGER" : "BIGINT"
                        )
                        .replacingOccurrences(
                            of: "{BLOB}",
                            with: database.kind == .sqlite ? "BLOB" : "BYTEA"
                        )
                    try await sql.raw(SQLQueryString(text)).run()
                }
                try await migration.then?(sql)
                try await sql.raw(
                    """
                    INSERT INTO schema_migrations (version, name, applied_at)
                    VALUES (\(bind: migration.version), \(bind: migration.name), \(bind: DBTime.millis(Date())))
                    """
                ).run()
                return true
            }
            if didApply {
                applied.append(migration.version)
                logger.info(
                    "migration applied",
                    metadata: ["version": "\(migration.version)", "name": "\(migration.name)"]
                )
            }
        }
        return applied
    }

    static func currentVersion(_ sql: any SQLDatabase) async throws -> Int {
        let row = try await sql.raw("SELECT MAX(version) AS version FROM schema_migrations").first()
        return try row.flatMap {
            try $0.decodeNil(column: "version") ? nil : $0.decode(column: "version", as: Int.self)
        } ?? 0
    }
}

/// Instants as the database stores them: milliseconds since 1970 (UTC).
enum DBTime {
    static func millis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    static func date(_ millis: Int64) -> Date {
        Date(timeIntervalSince1970: Double(millis) / 1000)
    }
}
