internal import Auth
public import Foundation
public import Hummingbird
public import Logging
internal import Models
internal import NIOCore
internal import NIOPosix
internal import ServiceLifecycle

/// How to run the store server (the `serve` command's options).
public struct StoreServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (the `listening on` line tells which).
    public var port: Int = 8080
    /// The database.
    public var database: DatabaseLocation = .defaultSQLite()
    /// Load the demo data when the database has no stores yet.
    public var demoData = false
    /// PBKDF2 iterations for new password hashes (the sign-in cost).
    public var passwordIterations = 600_000
    /// Lifetime of access tokens in seconds.
    public var accessTokenTTL: TimeInterval = 900
    /// Lifetime of refresh tokens in seconds.
    public var refreshTokenTTL: TimeInterval = 30 * 86_400
    /// Accepted signature age in seconds (the replay window).
    public var signatureWindow: Int64 = 300
    /// Connections per event loop to PostgreSQL.
    public var databaseConnections = 4
    /// Called once the server listens, with the address it bound (`--port 0`).
    public var onListening: (@Sendable (String, Int) -> Void)?

    /// The defaults: `127.0.0.1:8080`, `$SHOPFLOOR_HOME/server/store.sqlite`.
    public init() {}
}

/// The store server's parts, shared by the routes: database, configuration, auth.
final class ServerContext: Sendable {
    let configuration: StoreServerConfiguration
    let database: StoreDatabase
    let repository: Repository
    let config: ConfigService
    let users: UserRepository
    let limiter: SignInLimiter
    let idempotency: IdempotencyStore
    let gate: AuthGate
    let hasher: PasswordHasher
    let logger: Logger
    let startedAt = Date()

    init(configuration: StoreServerConfiguration, database: StoreDatabase, logger: Logger) {
        self.configuration = configuration
        self.database = database
        self.logger = logger
        repository = Repository(database: database)
        config = ConfigService(database: database)
        users = UserRepository(database: database)
        limiter = SignInLimiter(database: database)
        idempotency = IdempotencyStore(database: database)
        hasher = makePasswordHasher(iterations: configuration.passwordIterations)
        gate = AuthGate(
            database: database,
            accessTokenTTL: configuration.accessTokenTTL,
            refreshTokenTTL: configuration.refreshTokenTTL,
            window: configuration.signatureWindow,
            logger: logger
        )
    }
}

/// Opens the database, runs pending migrations, creates the configuration defaults and
/// (with `demoData`) loads the demo data into an empty database.
public func prepareDatabase(
    _ location: DatabaseLocation,
    demoData: Bool = false,
    passwordIterations: Int = 600_000,
    maxConnections: Int = 4,
    logger: Logger
) async throws -> StoreDatabase {
    let database = try StoreDatabase(
        location: location,
        maxConnections: maxConnections,
        logger: logger
    )
    do {
        try await Migrations.run(on: database, logger: logger)
        try await ConfigService(database: database).ensureDefaults()
        if demoData {
            try await DemoData.seedIfEmpty(
                database,
                passwordIterations: passwordIterations,
                logger: logger
            )
        }
    } catch let error as DatabaseError {
        await database.shutdown()
        throw error
    } catch {
        await database.shutdown()
        throw DatabaseError(
            .unavailable,
            "database '\(location)' could not be prepared",
            cause: error
        )
    }
    return database
}

/// Builds the store server: routes, middleware, database and background housekeeping.
///
/// The database is opened and migrated before this returns; it is closed when the
/// application stops (after in-flight requests are answered).
public func buildApplication(
    configuration: StoreServerConfiguration,
    logger: Logger = Logger(label: "store-server")
) async throws -> some ApplicationProtocol {
    let database = try await prepareDatabase(
        configuration.database,
        demoData: configuration.demoData,
        passwordIterations: configuration.passwordIterations,
        maxConnections: configuration.databaseConnections,
        logger: logger
    )
    StoreMetrics.bootstrap()
    let context = ServerContext(configuration: configuration, database: database, logger: logger)
    let router = Routes(context: context).makeRouter()
    let onListening = configuration.onListening
    var application = Application(
        router: router,
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: nil
        ),
        services: [DatabaseCloser(database: database), Housekeeping(context: context)],
        onServerRunning: { channel in
            let address = channel.localAddress
            onListening?(
                address?.ipAddress ?? configuration.host,
                address?.port ?? configuration.port
            )
        },
        logger: logger
    )
    application.logger.logLevel = logger.logLevel
    return application
}

/// Closes the database pool when the service group shuts down (after the server drained).
struct DatabaseCloser: Service {
    let database: StoreDatabase

    func run() async throws {
        try? await gracefulShutdown()
        await database.shutdown()
    }
}

/// Deletes what expired: nonces past their window, tokens, idempotency records after a day.
struct Housekeeping: Service {
    let context: ServerContext

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown {
                    try await Task.sleep(for: .seconds(60))
                }
            } catch {
                return
            }
            do {
                let now = Date()
                try await context.gate.purge(now: now)
                try await context.idempotency.purge(olderThan: now - 86_400)
            } catch {
                context.logger.warning("housekeeping failed", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// A store server running in this process (tests, benchmarks): started on `configuration`'s
/// address, stopped gracefully by ``stop()``.
public final class RunningStoreServer: Sendable {
    /// `http://host:port`.
    public let url: URL
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(url: URL, group: ServiceGroup, task: Task<Void, any Error>) {
        self.url = url
        self.group = group
        self.task = task
    }

    /// Builds and starts the server; returns once it listens.
    public static func start(
        configuration: StoreServerConfiguration,
        logger: Logger = Logger(label: "store-server")
    ) async throws -> RunningStoreServer {
        var configuration = configuration
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        configuration.onListening = { _, port in
            continuation.yield(port)
            continuation.finish()
        }
        let application = try await buildApplication(configuration: configuration, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [application],
                gracefulShutdownSignals: [],
                logger: logger
            )
        )
        let task = Task { try await group.run() }
        var iterator = stream.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await task.value
            throw DatabaseError(.unavailable, "the server stopped before it listened")
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return RunningStoreServer(
            url: URL(string: "http://\(host):\(port)")!,
            group: group,
            task: task
        )
    }

    /// Stops accepting connections, answers the requests in flight, closes the database.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
