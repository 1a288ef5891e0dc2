public import Foundation
public import Models
internal import SQLKit

/// A stored associate with their password hash (never printed).
public struct StoredUser: Sendable {
    /// The associate.
    public var associate: Associate
    /// `$pbkdf2-sha256$i=N$salt$hash`.
    var passwordHash: String
    /// When the user was added.
    public var createdAt: Date
}

/// An error of a user change, naming the user.
public struct UserError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable {
        /// The user name is not valid.
        case invalidName
        /// No such user.
        case notFound
        /// The user already exists.
        case exists
        /// The password is not acceptable.
        case invalidPassword
    }
    /// What went wrong.
    public var code: Code
    /// A message naming the user (never the password).
    public var message: String
    /// The message.
    public var description: String { message }
}

/// The `users` table.
struct UserRepository: Sendable {
    let database: StoreDatabase

    func user(_ username: String) async throws -> StoredUser? {
        guard
            let row = try await database.sql.raw(
                "SELECT username, display_name, home_store_id, password_hash, created_at FROM users WHERE username = \(bind: username)"
            ).first()
        else { return nil }
        return try Self.user(row)
    }

    func all() async throws -> [StoredUser] {
        try await database.sql.raw(
            "SELECT username, display_name, home_store_id, password_hash, created_at FROM users ORDER BY username"
        ).all().map(Self.user)
    }

    private static func user(_ row: any SQLRow) throws -> StoredUser {
        StoredUser(
            associate: try Associate(
                username: row.string("username"),
                displayName: row.string("display_name"),
                homeStoreID: row.optionalString("home_store_id").flatMap(UUID.init(uuidString:))
            ),
            passwordHash: try row.string("password_hash"),
            createdAt: try row.instant("created_at")
        )
    }

    /// Inserts a user; false when the name is taken.
    func insert(_ associate: Associate, passwordHash: String, now: Date) async throws -> Bool {
        let rows = try await database.sql.raw(
            """
            INSERT INTO users (username, display_name, home_store_id, password_hash, created_at, updated_at)
            VALUES (\(bind: associate.username), \(bind: associate.displayName), \(bind: associate.homeStoreID?.uuidString),
                    \(bind: passwordHash), \(bind: DBTime.millis(now)), \(bind: DBTime.millis(now)))
            ON CONFLICT (username) DO NOTHING RETURNING username
            """
        ).all()
        return !rows.isEmpty
    }

    /// Replaces a password hash; false when there is no such user.
    func setPasswordHash(_ username: String, _ hash: String, now: Date) async throws -> Bool {
        !(try await database.sql.raw(
            "UPDATE users SET password_hash = \(bind: hash), updated_at = \(bind: DBTime.millis(now)) WHERE username = \(bind: username) RETURNING username"
        ).all()).isEmpty
    }

    /// Deletes a user; false when there is no such user.
    func remove(_ username: String) async throws -> Bool {
        !(try await database.sql.raw(
            "DELETE FROM users WHERE username = \(bind: username) RETURNING username"
        ).all())
        .isEmpty
    }
}

/// Failed sign-ins per user name and per client address, counted in the database so every
/// instance enforces the same limit.
struct SignInLimiter: Sendable {
    let database: StoreDatabase
    /// Failures allowed per user name within `window`.
    var perUser = 5
    /// Failures allowed per client address within `window`.
    var perAddress = 20
    /// The counting window in seconds.
    var window: Int64 = 900

    /// Seconds to wait when either bucket is full, else nil.
    func retryAfter(username: String, address: String, now: Date) async throws -> Int64? {
        let nowMillis = DBTime.millis(now)
        let buckets = ["user:" + username.lowercased(), "addr:" + address]
        let rows = try await database.sql.raw(
            "SELECT bucket, failures, window_start FROM signin_failures WHERE bucket IN (\(binds: buckets))"
        ).all()
        var wait: Int64?
        for row in rows {
            let bucket = try row.string("bucket")
            let failures = try row.int("failures")
            let start = try row.int("window_start")
            let limit = bucket.hasPrefix("user:") ? perUser : perAddress
            let ends = start + window * 1000
            if failures >= limit, ends > nowMillis {
                wait = max(wait ?? 0, (ends - nowMillis + 999) / 1000)
            }
        }
        return wait
    }

    /// Counts one failure in both buckets (a new window when the old one has passed).
    func recordFailure(username: String, address: String, now: Date) async throws {
        let nowMillis = DBTime.millis(now)
        let cutoff = nowMillis - window * 1000
        for bucket in ["user:" + username.lowercased(), "addr:" + address] {
            try await database.sql.raw(
                """
                INSERT INTO signin_failures (bucket, failures, window_start) VALUES (\(bind: bucket), 1, \(bind: nowMillis))
                ON CONFLICT (bucket) DO UPDATE SET
                    failures = CASE WHEN signin_failures.window_start < \(bind: cutoff) THEN 1 ELSE signin_failures.failures + 1 END,
                    window_start = CASE WHEN signin_failures.window_start < \(bind: cutoff) THEN \(bind: nowMillis) ELSE signin_failures.window_start END
                """
            ).run()
        }
    }

    /// Forgets a user name's failures after a good sign-in.
    func clear(username: String) async throws {
        try await database.sql.raw(
            "DELETE FROM signin_failures WHERE bucket = \(bind: "user:" + username.lowercased())"
        ).run()
    }
}
