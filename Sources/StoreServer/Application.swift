internal import Auth
public import Foundation
public import Hummingbird
internal import HummingbirdCore
public import Logging
internal import Models
internal import NIOCore
internal import NIOPosix
internal import ServiceLifecycle

/// The store server's parts, built once: the database, the services that own the rules, and
/// what the middleware needs.
final class ServerContext: Sendable {
    let configuration: StoreServerConfiguration
    let database: StoreDatabase
    let repository: Repository
    let config: ConfigService
    let idempotency: IdempotencyStore
    let gate: AuthGate
    let clock: DatabaseClock
    let users: UserRepository
    let limiter: SignInLimiter
    let logger: Logger
    let reservations: ReservationService
    let customers: CustomerService
    let catalog: CatalogService
    let signIn: SignInService
    let clientConfiguration: ClientConfigurationService

    init(
        configuration: StoreServerConfiguration,
        database: StoreDatabase,
        rotationSecret: [UInt8],
        logger: Logger
    ) {
        self.configuration = configuration
        self.database = database
        self.logger = logger
        repository = Repository(database: database)
        config = ConfigService(database: database)
        idempotency = IdempotencyStore(database: database)
        users = UserRepository(database: database)
        limiter = SignInLimiter(database: database)
        clock = DatabaseClock(database: database, local: configuration.localClock)
        gate = AuthGate(
            database: database,
            accessTokenTTL: configuration.accessTokenTTL,
            refreshTokenTTL: configuration.refreshTokenTTL,
            sessionLifetime: configuration.sessionLifetime,
            rotationSecret: rotationSecret,
            window: configuration.signatureWindow,
            clock: clock,
            logger: logger
        )
        customers = CustomerService(repository: repository, config: config)
        reservations = ReservationService(
            database: database,
            repository: repository,
            config: config,
            customers: customers,
            logger: logger,
            now: configuration.calendarClock
        )
        catalog = CatalogService(repository: repository)
        signIn = SignInService(
            users: users,
            limiter: limiter,
            hashing: LoadLimiter(limits: configuration.signInHashing),
            hasher: makePasswordHasher(iterations: configuration.passwordIterations),
            gate: gate,
            logger: logger
        )
        clientConfiguration = ClientConfigurationService(repository: repository, config: config)
    }

    /// The router: request ids and access logs, problem documents, load shedding (at most
    /// `inFlight`'s total of requests at once), then one controller per resource on public,
    /// signed and idempotent route groups. Returns the routes it added.
    func makeRouter(inFlight: LoadLimiter) -> (Router<StoreRequestContext>, [RegisteredRoute]) {
        let router = Router(context: StoreRequestContext.self)
        router.add(
            middleware: AccessLogMiddleware(
                proxies: configuration.trustedProxies,
                directScheme: configuration.tls == nil ? "http" : "https"
            )
        )
        router.add(middleware: ProblemMiddleware(database: database))
        router.add(middleware: LoadSheddingMiddleware(limiter: inFlight))
        router.add(middleware: QueryTextMiddleware())
        let log = RouteLog()
        let repository = self.repository
        let routes = RouteGroups(
            router: router,
            log: log,
            gate: gate,
            users: users,
            idempotency: IdempotencyMiddleware(store: idempotency) { path, caller in
                try await repository.isVisible(path, scope: caller.scope)
            }
        )
        HealthController(
            database: database,
            metrics: configuration.metrics,
            separateMetrics: configuration.metricsAddress != nil,
            proxies: configuration.trustedProxies
        ).addRoutes(to: routes)
        ClientConfigurationController(service: clientConfiguration).addRoutes(to: routes)
        AuthController(service: signIn).addRoutes(to: routes)
        StoreController(service: catalog).addRoutes(to: routes)
        ReservationController(service: reservations).addRoutes(to: routes)
        CustomerController(service: customers).addRoutes(to: routes)
        ProductController(service: catalog).addRoutes(to: routes)
        return (router, log.all)
    }
}

/// Auth's hasher at `iterations`; below Auth's floor (100,000) only for tests and benchmarks.
func makePasswordHasher(iterations: Int) -> PasswordHasher {
    iterations >= PasswordHasher.minimumIterations
        ? PasswordHasher(iterations: iterations)
        : PasswordHasher.insecureForTesting(iterations: iterations)
}

/// Opens the database, runs pending migrations, creates the configuration defaults and
/// (with `demoData`) loads the demo data, built around the day of `now`, into an empty
/// database.
public func prepareDatabase(
    _ location: DatabaseLocation,
    demoData: Bool = false,
    passwordIterations: Int = 600_000,
    maxConnections: Int = 4,
    now: Date = Date(),
    logger: Logger
) async throws -> StoreDatabase {
    try await prepareDatabase(
        location,
        demoData: demoData,
        passwordIterations: passwordIterations,
        maxConnections: maxConnections,
        faults: nil,
        now: now,
        logger: logger
    )
}

/// ``prepareDatabase(_:demoData:passwordIterations:maxConnections:logger:)`` with faults a test
/// injects into every statement.
func prepareDatabase(
    _ location: DatabaseLocation,
    demoData: Bool,
    passwordIterations: Int,
    maxConnections: Int,
    faults: InjectedFaults?,
    backgroundCheckpoints: Bool = false,
    now: Date = Date(),
    logger: Logger
) async throws -> StoreDatabase {
    let database = try StoreDatabase(
        location: location,
        maxConnections: maxConnections,
        faults: faults,
        backgroundCheckpoints: backgroundCheckpoints,
        logger: logger
    )
    do {
        try await Migrations.run(on: database, logger: logger)
        try await ConfigService(database: database).ensureDefaults()
        if demoData {
            try await DemoData.seedIfEmpty(
                database,
                passwordIterations: passwordIterations,
                now: now,
                logger: logger
            )
        }
    } catch let error as DatabaseError {
        await database.shutdown()
        throw error
    } catch {
        await database.shutdown()
        if let reason = PostgresFailure.reason(error) {
            throw DatabaseError(
                .unavailable,
                "database '\(location)' could not be prepared: \(reason)"
            )
        }
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
    try await makeApplication(configuration: configuration, logger: logger).application
}

/// The application, the routes it serves and its TLS context (with `configuration.tls`).
func makeApplication(configuration: StoreServerConfiguration, logger: Logger) async throws -> (
    application: some ApplicationProtocol, routes: [RegisteredRoute], tls: ServerTLS?
) {
    // Before the database: a certificate that cannot be served stops the start at once.
    let tls = try configuration.tls.map { files throws(TLSFilesError) in
        try ServerTLS(files: files)
    }
    if let tls { logger.info("serving TLS", metadata: ["certificate": "\(tls.summary)"]) }
    let database = try await prepareDatabase(
        configuration.database,
        demoData: configuration.demoData,
        passwordIterations: configuration.passwordIterations,
        maxConnections: configuration.databaseConnections,
        faults: configuration.faults,
        backgroundCheckpoints: true,
        now: configuration.calendarClock(),
        logger: logger
    )
    await database.openAllConnections()
    let context = ServerContext(
        configuration: configuration,
        database: database,
        rotationSecret: try await ServerSecrets.value(of: "refresh-rotation", in: database),
        logger: logger
    )
    try await context.clock.synchronize()
    let (router, routes) = context.makeRouter(
        inFlight: LoadLimiter(
            limits: .init(
                total: configuration.maxRequestsInFlight ?? 16 * database.poolSize,
                perKey: [:]
            )
        )
    )
    let onListening = configuration.onListening
    let notifier = configuration.notifier
    var services: [any Service] = [
        DatabaseCloser(database: database), Housekeeping(context: context),
    ]
    if database.kind == .sqlite {
        services.append(WALCheckpointer(database: database, logger: logger))
    }
    if let notifier {
        services.append(SystemdWatchdog(notifier: notifier, database: database, logger: logger))
    }
    if let address = configuration.metricsAddress {
        services.append(
            MetricsListener.application(
                address: address,
                registry: configuration.metrics,
                idleTimeout: configuration.idleTimeout,
                onListening: configuration.onMetricsListening,
                logger: logger
            )
        )
    }
    let connections = LoadLimiter(limits: configuration.connections)
    let proxies = configuration.trustedProxies
    let bodyTimeout = configuration.bodyTimeout
    let http1 = HTTP1Channel.Configuration(
        additionalChannelHandlers: [
            ConnectionGate(
                limiter: connections,
                proxies: proxies,
                bodyTimeout: bodyTimeout,
                logger: logger
            ),
            HTTPEdgeHandler(),
        ],
        idleTimeout: TimeAmount(configuration.idleTimeout)
    )
    let server: HTTPServerBuilder
    if let tls {
        server = HTTPServerBuilder { responder in
            ReloadableTLSChannel(
                base: HTTP1Channel(responder: responder, configuration: http1),
                tls: tls
            )
        }
    } else {
        server = .http1(configuration: http1)
    }
    var application = Application(
        router: router,
        server: server,
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: nil,
            // Hummingbird's 256 loses handshakes in a burst of connects (the kernel completes
            // them for the client, then drops them with the accept queue full); the kernel
            // caps this at net.core.somaxconn (4096 on Debian).
            backlog: 4096
        ),
        services: services,
        onServerRunning: { channel in
            let address = channel.localAddress
            onListening?(
                address?.ipAddress ?? configuration.host,
                address?.port ?? configuration.port
            )
            // The database was opened and migrated before the listener: ready.
            notifier?.send("READY=1\nSTATUS=serving on port \(address?.port ?? configuration.port)")
        },
        logger: logger
    )
    application.logger.logLevel = logger.logLevel
    return (application, routes, tls)
}

/// Closes the database pool when the service group shuts down (after the server drained).
struct DatabaseCloser: Service {
    let database: StoreDatabase

    func run() async throws {
        try? await gracefulShutdown()
        await database.shutdown()
    }
}

/// SQLite: checkpoints the WAL every 250 ms off the request path (the server's connections
/// do not checkpoint on commit, see `StoreDatabase.init` and `StoreDatabase.checkpoint`).
/// Closing the database checkpoints the rest.
struct WALCheckpointer: Service {
    let database: StoreDatabase
    let logger: Logger
    var interval: Duration = .milliseconds(250)
    /// The WAL's size in frames past which a fully copied WAL is rewound.
    var restartFrames = 4_096

    func run() async throws {
        var warned = false
        // A rewind put off by a long read is tried again after 1, 2, 4 … 32 rounds: each try
        // holds writers back for up to 1 s. Below the forced size only a reader that began
        // after the last write can put it off (otherwise the passive pass cannot copy
        // everything, and no rewind is tried); past it, any reader older than 1 s.
        var rewindBackoff = 1, roundsToRewind = 0
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            do {
                roundsToRewind = max(0, roundsToRewind - 1)
                let result = try await database.checkpoint(
                    restartFrames: roundsToRewind == 0 ? restartFrames : .max
                )
                if result.restarted {
                    rewindBackoff = 1
                } else if result.rewindTried {
                    roundsToRewind = rewindBackoff
                    rewindBackoff = min(rewindBackoff * 2, 32)
                }
                warned = false
            } catch {
                // Once per spell of failures (a disk full, a database locked by another process).
                if !warned {
                    logger.warning("WAL checkpoint failed", metadata: ["error": "\(error)"])
                }
                warned = true
            }
        }
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
                try await context.clock.synchronize()
                let now = context.clock.now()
                try await context.gate.purge()
                try await context.idempotency.purge(olderThan: now - 86_400)
                try await context.limiter.purge(now: now)
            } catch {
                context.logger.warning("housekeeping failed", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// A store server running in this process (the `serve` command, tests, benchmarks): started
/// on `configuration`'s address, stopped gracefully by ``stop()``. It handles no signals itself;
/// whoever runs it decides when to stop it.
public final class RunningStoreServer: Sendable {
    /// `http://host:port`, or `https://host:port` when it serves TLS.
    public let url: URL
    /// The routes it serves, in the order they were added.
    public let routes: [RegisteredRoute]
    /// `http://host:port` of the metrics listener, when it has one.
    public let metricsURL: URL?
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let drainTimeout: Duration
    private let tls: ServerTLS?
    private let logger: Logger

    private init(
        url: URL,
        routes: [RegisteredRoute],
        metricsURL: URL?,
        group: ServiceGroup,
        task: Task<Void, any Error>,
        drainTimeout: Duration,
        tls: ServerTLS?,
        logger: Logger
    ) {
        self.url = url
        self.routes = routes
        self.metricsURL = metricsURL
        self.group = group
        self.task = task
        self.drainTimeout = drainTimeout
        self.tls = tls
        self.logger = logger
    }

    /// Builds and starts the server; returns once it listens (after `configuration`'s own
    /// `onListening` ran).
    /// - Throws: `DatabaseError` when the database cannot be prepared, ``ListenError`` when
    ///   the server (or its metrics listener) could not listen on its address.
    public static func start(
        configuration: StoreServerConfiguration,
        logger: Logger = Logger(label: "store-server")
    ) async throws -> RunningStoreServer {
        var configuration = configuration
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let announce = configuration.onListening
        configuration.onListening = { host, port in
            announce?(host, port)
            continuation.yield(port)
            continuation.finish()
        }
        let (metricsStream, metricsContinuation) = AsyncStream<Int>.makeStream()
        let announceMetrics = configuration.onMetricsListening
        configuration.onMetricsListening = { host, port in
            announceMetrics?(host, port)
            metricsContinuation.yield(port)
            metricsContinuation.finish()
        }
        let (application, routes, tls) = try await makeApplication(
            configuration: configuration,
            logger: logger
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [application],
                gracefulShutdownSignals: [],
                cancellationSignals: [],
                logger: logger
            )
        )
        // Unstructured: cancelling whoever started the server must not cut its requests off;
        // stop() drains them.
        let task = Task {
            defer {
                continuation.finish()
                metricsContinuation.finish()
            }
            try await group.run()
        }
        var iterator = stream.makeAsyncIterator()
        guard let port = await iterator.next() else {
            do {
                try await task.value
            } catch {
                throw ListenError(host: configuration.host, port: configuration.port, cause: error)
            }
            throw DatabaseError(.unavailable, "the server stopped before it listened")
        }
        var metricsURL: URL?
        if let address = configuration.metricsAddress {
            var metricsIterator = metricsStream.makeAsyncIterator()
            guard let metricsPort = await metricsIterator.next() else {
                do {
                    try await task.value
                } catch {
                    throw ListenError(host: address.host, port: address.port, cause: error)
                }
                throw DatabaseError(.unavailable, "the server stopped before its metrics listened")
            }
            metricsURL = URL(string: "http://\(Self.urlHost(address.host)):\(metricsPort)")
        }
        let host = Self.urlHost(configuration.host)
        return RunningStoreServer(
            url: URL(string: "\(tls == nil ? "http" : "https")://\(host):\(port)")!,
            routes: routes,
            metricsURL: metricsURL,
            group: group,
            task: task,
            drainTimeout: configuration.drainTimeout,
            tls: tls,
            logger: logger
        )
    }

    /// Reads the TLS certificate and key files again (the `serve` command does on SIGHUP):
    /// connections accepted from now on get the new certificate, open ones keep theirs. A
    /// failure (an unreadable file, bad PEM, a key that does not match) is logged as an error
    /// and the previous certificate stays served.
    /// - Returns: whether the new files are served; false also without TLS.
    @discardableResult
    public func reloadTLS() -> Bool {
        guard let tls else {
            logger.notice("reload asked, but the server serves no TLS: nothing to reload")
            return false
        }
        return tls.reload(logger: logger)
    }

    /// `host` as a URL's host (an IPv6 address in brackets).
    private static func urlHost(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }

    /// Stops accepting connections and answers the requests in flight; after the
    /// configuration's drain timeout it closes the connections that are left. Then the
    /// database is closed.
    public func stop() async {
        await group.triggerGracefulShutdown()
        let task = self.task
        let watchdog = Task { [drainTimeout] in
            try await Task.sleep(for: drainTimeout)
            task.cancel()
        }
        _ = try? await task.value
        watchdog.cancel()
    }

    /// Waits until the server has stopped (after ``stop()``, or a failure).
    /// - Throws: the error that stopped it.
    public func wait() async throws {
        try await task.value
    }
}
