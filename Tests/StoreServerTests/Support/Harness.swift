import Auth
import ChildProcesses
import Foundation
import Logging
import Metrics
import Models
import Prometheus
import Synchronization
import Testing

@testable import StoreServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The two databases every API test runs against.
enum DatabaseKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// The low password cost the tests use (the production default is 600,000).
let testPasswordCost = 1_000

/// A half-hour slot at 12:00 in a demo store's time zone, `days` days from today or the first
/// open day after (the demo stores are all open at noon on their open days), as RFC 3339 texts:
/// bookings a test makes fall within the store's opening hours whenever it runs.
func openSlot(_ store: UUID, days: Int, from now: Date = Date()) -> (start: String, end: String) {
    let seed =
        DemoData.storeSeeds.first { UUID(uuidString: $0.id) == store } ?? DemoData.storeSeeds[3]
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: seed.timeZone)!
    var day = calendar.date(byAdding: .day, value: days, to: calendar.startOfDay(for: now))!
    while true {
        let weekday = OpeningHours.Weekday(calendarWeekday: calendar.component(.weekday, from: day))
        if seed.hours[OpeningHours.Weekday.allCases.firstIndex(of: weekday)!] != "closed" { break }
        day = calendar.date(byAdding: .day, value: 1, to: day)!
    }
    let start = calendar.date(bySettingHour: 12, minute: 0, second: 0, of: day)!
    return (RFC3339.string(from: start), RFC3339.string(from: start + 1800))
}

/// Fresh databases with the demo data: seeded once per kind into a template (a SQLite file,
/// a PostgreSQL template database), then copied for each test.
enum TestDatabases {
    private static let templates = Mutex<[DatabaseKind: DatabaseLocation]>([:])
    private static let seeding = SeedingGate()

    static var logger: Logger {
        var logger = Logger(label: "store-server-tests")
        logger.logLevel = .warning
        return logger
    }

    /// A new database of `kind`; with `demo`, holding the demo data.
    static func make(_ kind: DatabaseKind, demo: Bool = true) async throws -> DatabaseLocation {
        switch kind {
        case .sqlite:
            let directory = try temporaryDirectory("db")
            let path = directory.appendingPathComponent("store.sqlite").path
            if demo {
                guard case .sqlite(let template) = try await template(kind) else { fatalError() }
                try FileManager.default.copyItem(atPath: template, toPath: path)
            }
            return .sqlite(path: path)
        case .postgres:
            let cluster = try await PostgresCluster.get()
            if demo {
                guard case .postgres(let template) = try await template(kind) else { fatalError() }
                let name = String(template.split(separator: "/").last!)
                return .postgres(url: try await cluster.makeDatabase(template: name))
            }
            return .postgres(url: try await cluster.makeDatabase())
        }
    }

    private static func template(_ kind: DatabaseKind) async throws -> DatabaseLocation {
        try await seeding.run {
            if let existing = templates.withLock({ $0[kind] }) { return existing }
            let location: DatabaseLocation
            switch kind {
            case .sqlite:
                location = .sqlite(
                    path: try temporaryDirectory("template").appendingPathComponent("store.sqlite")
                        .path
                )
            case .postgres:
                location = .postgres(url: try await PostgresCluster.get().makeDatabase())
            }
            let database = try await prepareDatabase(
                location,
                demoData: true,
                passwordIterations: testPasswordCost,
                logger: logger
            )
            await database.shutdown()
            templates.withLock { $0[kind] = location }
            return location
        }
    }

    static func temporaryDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "store-server-tests-\(name)-\(UUID().uuidString.prefix(8))"
        )
        // 0700: the server refuses a database in a directory others may enter.
        try FileManager.default.createDirectory(
            at: url,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        return url
    }
}

/// Runs one body at a time (seeding a template once).
actor SeedingGate {
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await body()
    }
}

extension PostgresCluster {
    /// The first column of the first row of `query`, run on `database`, as text.
    func value(_ query: String, in database: String) async throws -> String {
        let outcome = try await ChildProcess.run(
            binDirectory.appendingPathComponent("psql"),
            [
                "-h", "127.0.0.1", "-p", String(port), "-U", Self.user, "-d", database, "-v",
                "ON_ERROR_STOP=1", "-qAt", "-c", query,
            ],
            timeout: 120
        )
        guard outcome.status == 0, !outcome.signalled else {
            throw PostgresClusterError("psql \(query): \(outcome)")
        }
        return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func psql(_ command: String) async throws {
        let outcome = try await ChildProcess.run(
            binDirectory.appendingPathComponent("psql"),
            [
                "-h", "127.0.0.1", "-p", String(port), "-U", Self.user, "-d", "postgres", "-v",
                "ON_ERROR_STOP=1", "-q", "-c", command,
            ],
            timeout: 120
        )
        guard outcome.status == 0, !outcome.signalled else {
            throw PostgresClusterError("psql \(command): \(outcome)")
        }
    }
}

/// The test process's metrics, routed to one Prometheus registry as `store-server serve` does
/// (swift-metrics is bootstrapped once per process).
enum TestMetrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()
}

/// A server in this process on a fresh demo database, stopped by `stop()`.
struct TestServer: Sendable {
    let server: RunningStoreServer
    let location: DatabaseLocation
    var url: URL { server.url }
    /// The routes the server serves.
    var routes: [RegisteredRoute] { server.routes }

    static func start(
        _ kind: DatabaseKind,
        demo: Bool = true,
        location: DatabaseLocation? = nil,
        accessTokenTTL: TimeInterval = 900,
        port: Int = 0,
        faults: InjectedFaults? = nil,
        idleTimeout: Duration = .seconds(30),
        drainTimeout: Duration = .seconds(10),
        passwordIterations: Int = testPasswordCost,
        trustedProxies: [String] = [],
        connections: LoadLimiter.Limits = StoreServerConfiguration().connections,
        bodyTimeout: Duration = .seconds(60),
        sessionLifetime: TimeInterval = 30 * 86_400,
        clockShift: TimeInterval = 0,
        now: Date? = nil,
        calendarClock: (@Sendable () -> Date)? = nil,
        metricsPort: Int? = nil,
        tls: TLSFiles? = nil,
        maxRequestsInFlight: Int? = nil,
        logger: Logger = TestDatabases.logger
    ) async throws -> TestServer {
        let resolved: DatabaseLocation
        if let location {
            resolved = location
        } else {
            resolved = try await TestDatabases.make(kind, demo: demo)
        }
        let location = resolved
        var configuration = StoreServerConfiguration()
        configuration.port = port
        configuration.database = location
        configuration.passwordIterations = passwordIterations
        configuration.trustedProxies = TrustedProxies(
            trustedProxies.compactMap(TrustedProxies.Range.init)
        )
        configuration.accessTokenTTL = accessTokenTTL
        configuration.metrics = TestMetrics.registry
        configuration.faults = faults
        configuration.sessionLifetime = sessionLifetime
        configuration.localClock = { Date() + clockShift }
        if let now { configuration.calendarClock = { now } }
        if let calendarClock { configuration.calendarClock = calendarClock }
        configuration.idleTimeout = idleTimeout
        configuration.drainTimeout = drainTimeout
        configuration.connections = connections
        configuration.bodyTimeout = bodyTimeout
        configuration.metricsAddress = metricsPort.map { .init(host: "127.0.0.1", port: $0) }
        configuration.tls = tls
        configuration.maxRequestsInFlight = maxRequestsInFlight
        let server = try await RunningStoreServer.start(
            configuration: configuration,
            logger: logger
        )
        return TestServer(server: server, location: location)
    }

    func stop() async { await server.stop() }

    /// A signed-in `AuthClient` (the demo administrator, who sees every store, unless told
    /// otherwise) with its own token directory.
    func client(username: String = DemoData.adminUsername, password: String = DemoData.password)
        async throws -> SignedClient
    {
        try await SignedClient.signIn(url, username: username, password: password)
    }
}

/// Auth's client, signed in, with helpers to send JSON.
struct SignedClient: Sendable {
    let client: AuthClient
    let directory: URL

    static func signIn(_ url: URL, username: String, password: String) async throws -> SignedClient
    {
        let directory = try TestDatabases.temporaryDirectory("tokens")
        let client = AuthClient(
            configuration: AuthClientConfiguration(
                serverURL: url,
                deadline: .seconds(60),
                retry: .none
            ),
            store: TokenStore(directory: directory),
            logger: Logger(label: "test-client")
        )
        try await client.signIn(username: username, password: password)
        return SignedClient(client: client, directory: directory)
    }

    /// Sends a signed request.
    func send(
        _ method: String,
        _ path: String,
        json: String? = nil,
        body: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> HTTPReply {
        var request = URLRequest(
            url: URL(string: client.configuration.serverURL.absoluteString + path)!
        )
        request.httpMethod = method
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let body {
            request.httpBody = body
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await client.send(request)
        return HTTPReply(response: response, data: data)
    }
}

/// An answer: status, headers, body.
struct HTTPReply: Sendable {
    let status: Int
    let headers: [String: String]
    let data: Data

    init(response: HTTPURLResponse, data: Data) {
        status = response.statusCode
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String {
                headers[name.lowercased()] = value
            }
        }
        self.headers = headers
        self.data = data
    }

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder.shopfloor.decode(T.self, from: data)
    }

    /// The problem document (fails the test when the body is not one).
    func problem() throws -> APIProblem {
        #expect(header("content-type") == "application/problem+json", "content type of a \(status)")
        return try JSONDecoder.shopfloor.decode(APIProblem.self, from: data)
    }

    var text: String { String(decoding: data, as: UTF8.self) }
}

/// Plain unsigned HTTP (public routes, raw requests).
enum PlainHTTP {
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()

    static func send(
        _ method: String,
        _ url: URL,
        body: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> HTTPReply {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        return HTTPReply(response: response as! HTTPURLResponse, data: data)
    }

    static func form(_ url: URL, _ pairs: [(String, String)], headers: [String: String] = [:])
        async throws -> HTTPReply
    {
        var all = headers
        all["Content-Type"] = "application/x-www-form-urlencoded"
        return try await send("POST", url, body: FormEncoding.encode(pairs), headers: all)
    }
}

/// The built `store-server` binary, run as a child process.
final class ServerProcess: Sendable {
    let child: ChildProcess
    let url: URL

    /// The test runner and the executables share the build products directory.
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("store-server")
    }

    /// Starts `store-server serve --port 0` on `location` and waits for its first line.
    /// With `log`, stderr goes to that file (to be read while the server runs).
    init(
        location: DatabaseLocation,
        port: Int = 0,
        quiet: Bool = true,
        extra: [String] = [],
        log: String? = nil
    ) async throws {
        let database: String
        switch location {
        case .sqlite(let path): database = path
        case .postgres(let url): database = url
        }
        child = try await ChildProcess.start(
            Self.binary,
            [
                "serve", "--port", String(port), "--database", database,
                "--insecure-password-cost-for-tests", "--password-cost",
                String(testPasswordCost),
            ] + (quiet ? ["--quiet"] : []) + extra,
            stderr: log.map { .path($0) } ?? .pipe
        )
        let text = await child.nextLine(timeout: 120) ?? ""
        guard text.hasPrefix("listening on "),
            let url = URL(string: String(text.dropFirst("listening on ".count)))
        else {
            let outcome = await child.stop(with: SIGKILL).outcome
            throw PostgresClusterError(
                "store-server did not start: '\(text)' \(outcome.stderr.suffix(600))"
            )
        }
        self.url = url
    }

    /// Sends `signal` and waits for the exit status.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) async -> Int32 {
        await child.stop(with: signal).outcome.status
    }

    /// Sends SIGTERM without waiting (for a `defer`, where nothing can be awaited).
    func terminate() { child.signal(SIGTERM) }

    /// What the server wrote to stderr, once it has exited.
    func errors() async -> String { await child.wait().stderr }
}
