public import Foundation
public import Models
internal import SQLKit
internal import Synchronization

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

/// What a signed-in user may see: their role and the stores in scope.
struct Access: Sendable, Equatable {
    var role: Role
    var homeStoreID: UUID?
    var scope: StoreScope

    /// What a user that no longer exists sees: nothing.
    static let nothing = Access(role: .associate, homeStoreID: nil, scope: .only([]))

    /// A user's access: every store for a role that sees them all, else `storeIDs`.
    init(role: Role, homeStoreID: UUID?, storeIDs: [UUID]) {
        self.init(
            role: role,
            homeStoreID: homeStoreID,
            scope: role.seesEveryStore ? .everyStore : .only(storeIDs)
        )
    }

    init(role: Role, homeStoreID: UUID?, scope: StoreScope) {
        self.role = role
        self.homeStoreID = homeStoreID
        self.scope = scope
    }
}

/// The `users` and `user_stores` tables.
struct UserRepository: Sendable {
    let database: StoreDatabase

    static let columns =
        "u.username, u.display_name, u.home_store_id, u.password_hash, u.created_at, u.role, us.store_id"

    func user(_ username: String) async throws -> StoredUser? {
        // Every signed request reads its user: a prepared statement on PostgreSQL.
        try Self.users(
            try await database.rows(
                PreparedStatements.UserWithStores(username: username),
                otherwise: """
                    SELECT \(unsafeRaw: Self.columns) FROM users u LEFT JOIN user_stores us ON us.username = u.username
                    WHERE u.username = \(bind: username) ORDER BY us.store_id
                    """
            )
        ).first
    }

    func all() async throws -> [StoredUser] {
        try Self.users(
            try await database.sql.raw(
                """
                SELECT \(unsafeRaw: Self.columns) FROM users u LEFT JOIN user_stores us ON us.username = u.username
                ORDER BY u.username, us.store_id
                """
            ).all()
        )
    }

    /// Users from rows ordered by user name, one row per store (or one without a store).
    private static func users(_ rows: [any SQLRow]) throws -> [StoredUser] {
        var users: [StoredUser] = []
        for row in rows {
            let username = try row.string("username")
            let store = try row.optionalString("store_id").flatMap(UUID.init(parsing:))
            if let last = users.last, last.associate.username == username {
                if let store { users[users.count - 1].associate.storeIDs.append(store) }
                continue
            }
            let role = try Self.role(row.string("role"), of: username)
            users.append(
                StoredUser(
                    associate: try Associate(
                        username: username,
                        displayName: row.string("display_name"),
                        homeStoreID: row.optionalString("home_store_id").flatMap(
                            UUID.init(parsing:)
                        ),
                        role: role,
                        storeIDs: store.map { [$0] } ?? []
                    ),
                    passwordHash: try row.string("password_hash"),
                    createdAt: try row.instant("created_at")
                )
            )
        }
        return users
    }

    /// What `username` may see: their role and stores, read on every request so a change
    /// takes effect at once. A user that no longer exists sees nothing.
    func access(_ username: String) async throws -> Access {
        guard let associate = try await user(username)?.associate else { return .nothing }
        return Access(
            role: associate.role,
            homeStoreID: associate.homeStoreID,
            storeIDs: associate.storeIDs
        )
    }

    /// A stored role, or a ``StoredDataError`` naming the user.
    private static func role(_ text: String, of username: String) throws -> Role {
        guard let role = Role(rawValue: text) else {
            throw StoredDataError("user \(username) has the unknown role '\(text.prefix(20))'")
        }
        return role
    }

    /// The access of rows read with ``SQLSessionStore/tokenWithAccessSelect`` (`u_username`,
    /// `u_role`, `u_home_store_id`, `us_store_id`, one row per store): no access when the
    /// user is gone, as ``access(_:)``.
    static func access(fromAccessRows rows: [any SQLRow]) throws -> Access {
        guard let first = rows.first, let username = try first.optionalString("u_username") else {
            return .nothing
        }
        return Access(
            role: try role(first.string("u_role"), of: username),
            homeStoreID: try first.optionalString("u_home_store_id").flatMap(
                UUID.init(parsing:)
            ),
            storeIDs: try rows.compactMap {
                try $0.optionalString("us_store_id").flatMap(UUID.init(parsing:))
            }
        )
    }

    /// Sets a user's role and stores (the first store is the home store).
    /// - Returns: false when there is no such user.
    func setAccess(_ username: String, role: Role, stores: [UUID], now: Date) async throws -> Bool {
        try await database.transaction { sql in
            let updated = try await sql.raw(
                """
                UPDATE users SET role = \(bind: role.rawValue), home_store_id = \(bind: stores.first?.uuidString),
                    updated_at = \(bind: DBTime.millis(now))
                WHERE username = \(bind: username) RETURNING username
                """
            ).all()
            guard !updated.isEmpty else { return false }
            try await sql.raw("DELETE FROM user_stores WHERE username = \(bind: username)").run()
            for store in stores {
                try await sql.raw(
                    "INSERT INTO user_stores (username, store_id) VALUES (\(bind: username), \(bind: store.uuidString))"
                ).run()
            }
            return true
        }
    }

    /// Inserts a user with their role and stores; false when the name is taken.
    func insert(_ associate: Associate, passwordHash: String, now: Date) async throws -> Bool {
        try await database.transaction { sql in
            let rows = try await sql.raw(
                """
                INSERT INTO users (username, display_name, home_store_id, password_hash, created_at, updated_at, role)
                VALUES (\(bind: associate.username), \(bind: associate.displayName), \(bind: associate.homeStoreID?.uuidString),
                        \(bind: passwordHash), \(bind: DBTime.millis(now)), \(bind: DBTime.millis(now)), \(bind: associate.role.rawValue))
                ON CONFLICT (username) DO NOTHING RETURNING username
                """
            ).all()
            guard !rows.isEmpty else { return false }
            for store in associate.storeIDs {
                try await sql.raw(
                    "INSERT INTO user_stores (username, store_id) VALUES (\(bind: associate.username), \(bind: store.uuidString))"
                ).run()
            }
            return true
        }
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

/// The caller's access, read by the same statement as their token
/// (``SQLSessionStore/tokenWithSession(digest:)``) while a signed request's gate looks the
/// token up inside ``withPrefetch(_:)``; ``SignatureMiddleware`` then needs no query of its
/// own. Bound to the task, so concurrent requests never see each other's.
final class AccessPrefetch: Sendable {
    @TaskLocal static var current: AccessPrefetch?

    private let found = Mutex<(subject: String, access: Access)?>(nil)

    /// Runs `body` with a new prefetch bound to the task; returns its result and the access
    /// read meanwhile, if any, with the user it belongs to.
    static func withPrefetch<T: Sendable>(_ body: () async throws -> T) async rethrows
        -> (T, (subject: String, access: Access)?)
    {
        let prefetch = AccessPrefetch()
        let value = try await $current.withValue(prefetch) { try await body() }
        return (value, prefetch.found.withLock { $0 })
    }

    func set(_ access: Access, of subject: String) {
        found.withLock { $0 = (subject, access) }
    }
}
