internal import Auth
public import Foundation
public import Logging
public import Models
internal import NIOPosix
internal import SQLKit

/// The administration commands' logic (users, their roles and stores, configuration, demo
/// data) on one database.
public final class StoreAdmin: Sendable {
    /// The database (migrated).
    public let database: StoreDatabase
    let logger: Logger
    let passwordIterations: Int

    /// Opens and migrates `location`.
    public static func open(
        _ location: DatabaseLocation,
        passwordIterations: Int = 600_000,
        logger: Logger
    ) async throws -> StoreAdmin {
        let database = try await prepareDatabase(
            location,
            passwordIterations: passwordIterations,
            maxConnections: 1,
            logger: logger
        )
        return StoreAdmin(
            database: database,
            passwordIterations: passwordIterations,
            logger: logger
        )
    }

    init(database: StoreDatabase, passwordIterations: Int, logger: Logger) {
        self.database = database
        self.passwordIterations = passwordIterations
        self.logger = logger
    }

    /// Closes the database.
    public func close() async { await database.shutdown() }

    // MARK: Users

    /// Adds a user with a role and stores (ids or short names; the first is the home store;
    /// `homeStoreID` alone makes a one-store associate); throws `UserError` naming the user
    /// when the name is taken or bad, or a store that does not exist.
    public func addUser(
        _ username: String,
        password: String,
        displayName: String? = nil,
        homeStoreID: UUID? = nil,
        role: Role = .associate,
        stores: [String] = []
    ) async throws -> Associate {
        guard Associate.isValidUsername(username) else {
            throw UserError(
                code: .invalidName,
                message:
                    "user name '\(username.prefix(64))' must be 1–64 letters, digits, '.', '_' or '-'"
            )
        }
        try Self.checkPassword(password, username: username)
        let storeIDs = try await resolve(stores + (homeStoreID.map { [$0.uuidString] } ?? []))
        let associate: Associate
        do {
            associate = try Associate(
                username: username,
                displayName: displayName ?? username,
                homeStoreID: storeIDs.first,
                role: role,
                storeIDs: storeIDs
            )
        } catch {
            throw UserError(code: .invalidName, message: "display name: \(error.reason)")
        }
        let hash = try await hash(password)
        guard
            try await UserRepository(database: database).insert(
                associate,
                passwordHash: hash,
                now: Date()
            )
        else {
            throw UserError(code: .exists, message: "user \(username) already exists")
        }
        return associate
    }

    /// Changes a user's role and stores (ids or short names; the first is the home store); the
    /// change applies to the user's next request, without a new sign-in.
    public func setAccess(_ username: String, role: Role, stores: [String]) async throws
        -> Associate
    {
        let storeIDs = try await resolve(stores)
        guard
            try await UserRepository(database: database).setAccess(
                username,
                role: role,
                stores: storeIDs,
                now: Date()
            ), let user = try await UserRepository(database: database).user(username)
        else {
            throw UserError(code: .notFound, message: "user \(username.prefix(64)) does not exist")
        }
        return user.associate
    }

    /// Store ids for ids or short names, in order, without repeats.
    private func resolve(_ references: [String]) async throws -> [UUID] {
        var ids: [UUID] = []
        for reference in references {
            let store = try await store(reference)
            if !ids.contains(store.id) { ids.append(store.id) }
        }
        return ids
    }

    /// Every associate, by name.
    public func listUsers() async throws -> [StoredUser] {
        try await UserRepository(database: database).all()
    }

    /// Sets a new password and signs the user out everywhere.
    public func setPassword(_ username: String, password: String) async throws {
        try Self.checkPassword(password, username: username)
        let hash = try await hash(password)
        guard
            try await UserRepository(database: database).setPasswordHash(
                username,
                hash,
                now: Date()
            )
        else {
            throw UserError(code: .notFound, message: "user \(username.prefix(64)) does not exist")
        }
        try await SQLSessions.revokeAll(subject: username, database: database)
    }

    /// Removes an associate and their sessions.
    public func removeUser(_ username: String) async throws {
        guard try await UserRepository(database: database).remove(username) else {
            throw UserError(code: .notFound, message: "user \(username.prefix(64)) does not exist")
        }
        try await SQLSessions.revokeAll(subject: username, database: database)
    }

    /// Sessions and refresh tokens of a user: open sessions, and refresh tokens issued (one
    /// per sign-in plus one per refresh), for operators and tests.
    public func sessionCounts(_ username: String) async throws -> (
        openSessions: Int, refreshTokens: Int
    ) {
        let sessions =
            try await database.sql.raw(
                "SELECT COUNT(*) AS n FROM auth_sessions WHERE subject = \(bind: username) AND revoked_at IS NULL"
            ).first()?.int("n") ?? 0
        let tokens =
            try await database.sql.raw(
                """
                SELECT COUNT(*) AS n FROM auth_tokens t JOIN auth_sessions s ON s.id = t.session_id
                WHERE s.subject = \(bind: username) AND t.kind = 'refresh'
                """
            ).first()?.int("n") ?? 0
        return (Int(sessions), Int(tokens))
    }

    static func checkPassword(_ password: String, username: String) throws(UserError) {
        guard password.count >= 8, password.utf8.count <= 1024 else {
            throw UserError(
                code: .invalidPassword,
                message: "the password for \(username.prefix(64)) must be 8 to 1024 characters"
            )
        }
    }

    private func hash(_ password: String) async throws -> String {
        let hasher = makePasswordHasher(iterations: passwordIterations)
        return try await NIOThreadPool.singleton.runIfActive { try hasher.hash(password) }
    }

    // MARK: Stores

    /// The store with id or short name `reference`; throws `UserError` (`notFound`) naming it.
    public func store(_ reference: String) async throws -> Store {
        guard
            let store = try await Repository(database: database).store(
                reference: reference,
                scope: .everyStore
            )
        else {
            throw UserError(
                code: .notFound,
                message:
                    "store '\(reference.prefix(64))' does not exist (give its id or short name)"
            )
        }
        return store
    }

    /// Sets `span` (nil: closed) on `days` of the store's opening hours and returns the store
    /// as it is now. A store without hours starts from open all day, every day.
    public func setOpeningHours(
        _ store: Store,
        days: [OpeningHours.Weekday],
        span: OpeningHours.Span?
    ) async throws -> Store {
        var hours = store.openingHours ?? .allDay
        hours.set(span, on: days)
        guard try await Repository(database: database).setOpeningHours(hours, store: store.id)
        else {
            throw UserError(code: .notFound, message: "store \(store.name) no longer exists")
        }
        var updated = store
        updated.openingHours = hours
        logger.info(
            "opening hours set",
            metadata: ["store": .string(store.id.uuidString), "hours": .string(hours.description)]
        )
        return updated
    }

    // MARK: Configuration

    /// The configuration service.
    public var config: ConfigService { ConfigService(database: database) }

    /// The stored configuration as JSON: a `ClientConfiguration` (its `minimumClientVersion`
    /// the default for every app) plus `minimumClientVersions` by app; `config import` reads
    /// it back.
    public func configurationJSON() async throws -> Data {
        let snapshot = try await config.current()
        let configuration = try snapshot.configuration(for: "*")
        var object =
            try JSONSerialization.jsonObject(with: JSONEncoder.shopfloor.encode(configuration))
            as? [String: Any] ?? [:]
        object["minimumClientVersions"] = snapshot.minimumVersions.filter { $0.key != "*" }
            .mapValues(\.description)
        return try JSONSerialization.data(
            withJSONObject: object,
            options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        )
    }

    // MARK: Demo data

    /// Loads the demo data, built around the day of `now`, into an empty database.
    public func seedDemo(now: Date = Date()) async throws -> DemoSummary {
        try await DemoData.seedIfEmpty(
            database,
            passwordIterations: passwordIterations,
            now: now,
            logger: logger
        )
    }
}
