import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Metrics
import Prometheus
import StoreServer

/// `store-server serve`: the API until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the API (first stdout line: listening on http[s]://HOST:PORT).",
        discussion: """
            SIGINT or SIGTERM stops accepting connections and answers the requests in flight \
            (for at most --drain-timeout seconds, then closes what is left), then exits 130 or \
            143; a second signal exits at once.

            With --tls-certificate and --tls-key the listener speaks TLS 1.2 or later only \
            (no plain HTTP). SIGHUP reads both files again: new connections get the new \
            certificate, open ones keep theirs; files that cannot be served are logged as an \
            error and the previous certificate stays.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0: any free port).") var port = 8080
    @Flag(help: "Load the demo data first when the database has no stores.") var demoData = false
    @Option(help: "Access token lifetime in seconds.") var accessTokenTtl = 900
    @Option(help: "Refresh token lifetime in seconds.") var refreshTokenTtl = 30 * 86_400
    @Option(help: "Days a session lasts from its sign-in, refreshes included.")
    var sessionLifetimeDays = 30
    @Option(help: "PostgreSQL connections per event loop.") var databaseConnections = 4
    @Option(help: "Seconds a stop waits for requests in flight before closing them.")
    var drainTimeout = 10
    @Option(
        help:
            "Seconds a connection may stay silent (also half-way through a request) before it is closed."
    )
    var idleTimeout = 30
    @Option(help: "Log lines as text or json (one object per line), each with a timestamp.")
    var logFormat: LogFormat = .text
    @Option(help: "Seconds one request may take from its head to the end of its body.")
    var bodyTimeout = 60
    @Option(help: "Connections held at once in all; more are answered 503.")
    var maxConnections = 16_384
    @Option(help: "Connections held at once per client address; more are answered 503.")
    var maxConnectionsPerAddress = 256
    @Option(
        help: ArgumentHelp(
            "Requests handled at once; more are answered 503 with Retry-After (/health never is). Default: 16 per database connection.",
            valueName: "n"
        )
    )
    var maxRequestsInFlight: Int?
    @Option(
        name: .customLong("trusted-proxy"),
        parsing: .upToNextOption,
        help: ArgumentHelp(
            "Proxies (CIDR ranges) whose X-Forwarded-For and X-Forwarded-Proto are believed.",
            valueName: "cidr"
        )
    )
    var trustedProxies: [String] = []
    @Option(
        help: ArgumentHelp(
            "Serve /metrics on this port of --metrics-host only (0: any free port); without it /metrics answers peers on this machine that are not a trusted proxy.",
            valueName: "port"
        )
    )
    var metricsPort: Int?
    @Option(help: "Address of the /metrics listener (with --metrics-port).")
    var metricsHost = "127.0.0.1"
    @Option(
        help: ArgumentHelp(
            "Serve TLS with this PEM certificate (the server's first, then any intermediates).",
            valueName: "file"
        )
    )
    var tlsCertificate: String?
    @Option(
        help: ArgumentHelp(
            "The PEM private key of --tls-certificate (unencrypted).",
            valueName: "file"
        )
    )
    var tlsKey: String?
    @OptionGroup var options: DatabaseOptions
    @OptionGroup var cost: PasswordCostOptions

    func validate() throws {
        guard (0...65_535).contains(port) else {
            throw ValidationError("--port must be 0…65535, got \(port)")
        }
        guard accessTokenTtl >= 1 else {
            throw ValidationError("--access-token-ttl must be at least 1 second")
        }
        guard refreshTokenTtl >= accessTokenTtl else {
            throw ValidationError("--refresh-token-ttl must be at least --access-token-ttl")
        }
        guard (1...3650).contains(sessionLifetimeDays) else {
            throw ValidationError(
                "--session-lifetime-days must be 1…3650, got \(sessionLifetimeDays)"
            )
        }
        guard (1...64).contains(databaseConnections) else {
            throw ValidationError("--database-connections must be 1…64")
        }
        guard (0...3600).contains(drainTimeout) else {
            throw ValidationError("--drain-timeout must be 0…3600 seconds, got \(drainTimeout)")
        }
        guard (1...3600).contains(idleTimeout) else {
            throw ValidationError("--idle-timeout must be 1…3600 seconds, got \(idleTimeout)")
        }
        guard (1...3600).contains(bodyTimeout) else {
            throw ValidationError("--body-timeout must be 1…3600 seconds, got \(bodyTimeout)")
        }
        guard (1...1_000_000).contains(maxConnections) else {
            throw ValidationError("--max-connections must be 1…1000000, got \(maxConnections)")
        }
        guard (1...maxConnections).contains(maxConnectionsPerAddress) else {
            throw ValidationError(
                "--max-connections-per-address must be 1…--max-connections, got \(maxConnectionsPerAddress)"
            )
        }
        if let maxRequestsInFlight, !(1...1_000_000).contains(maxRequestsInFlight) {
            throw ValidationError(
                "--max-requests-in-flight must be 1…1000000, got \(maxRequestsInFlight)"
            )
        }
        if let metricsPort {
            guard (0...65_535).contains(metricsPort) else {
                throw ValidationError("--metrics-port must be 0…65535, got \(metricsPort)")
            }
            guard metricsPort == 0 || metricsPort != port || metricsHost != host else {
                throw ValidationError("--metrics-port must differ from --port on the same host")
            }
        }
        guard !metricsHost.isEmpty else {
            throw ValidationError("--metrics-host must not be empty")
        }
        if tlsCertificate != nil, tlsKey == nil {
            throw ValidationError("--tls-key is missing: --tls-certificate needs its key")
        }
        if tlsKey != nil, tlsCertificate == nil {
            throw ValidationError("--tls-certificate is missing: --tls-key needs its certificate")
        }
        for range in trustedProxies where TrustedProxies.Range(range) == nil {
            throw ValidationError(
                "--trusted-proxy '\(range.prefix(60))' is not an address range such as 10.0.0.0/8 or 2001:db8::/32"
            )
        }
    }

    func run() async throws {
        // The drain may take its time; the process exits by itself shortly after it.
        StopSignal.allowGrace(.seconds(drainTimeout + 5))
        let format = logFormat
        var logger = Logger(label: "store-server") { ServerLogHandler(label: $0, format: format) }
        logger.logLevel = options.logger("store-server", defaultLevel: .info).logLevel
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        var configuration = StoreServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.database = options.location
        configuration.demoData = demoData
        configuration.calendarClock = { TestClock.now() }
        configuration.passwordIterations = cost.passwordCost
        configuration.accessTokenTTL = TimeInterval(accessTokenTtl)
        configuration.refreshTokenTTL = TimeInterval(refreshTokenTtl)
        configuration.sessionLifetime = TimeInterval(sessionLifetimeDays) * 86_400
        configuration.databaseConnections = databaseConnections
        configuration.drainTimeout = .seconds(drainTimeout)
        configuration.idleTimeout = .seconds(idleTimeout)
        configuration.trustedProxies = TrustedProxies(
            trustedProxies.compactMap(TrustedProxies.Range.init)
        )
        configuration.bodyTimeout = .seconds(bodyTimeout)
        configuration.connections = LoadLimiter.Limits(
            total: maxConnections,
            perKey: ["address": maxConnectionsPerAddress]
        )
        configuration.maxRequestsInFlight = maxRequestsInFlight
        configuration.metrics = registry
        configuration.metricsAddress = metricsPort.map {
            StoreServerConfiguration.ListenAddress(host: metricsHost, port: $0)
        }
        if let tlsCertificate, let tlsKey {
            configuration.tls = TLSFiles(certificate: tlsCertificate, key: tlsKey)
        }
        configuration.notifier = SystemdNotifier(environment: ProcessInfo.processInfo.environment)
        let displayHost = host.contains(":") ? "[\(host)]" : host
        let scheme = configuration.tls == nil ? "http" : "https"
        configuration.onListening = { _, port in
            do {
                try StandardOutput.line("listening on \(scheme)://\(displayHost):\(port)")
            } catch {
                Console.warning("\(error); serving on port \(port) all the same")
            }
        }
        let server: RunningStoreServer
        do {
            server = try await RunningStoreServer.start(
                configuration: configuration,
                logger: logger
            )
        } catch {
            throw CommandError.failure("\(error)")
        }
        StopSignal.onStop { Task { await server.stop() } }
        // Caught even without TLS: a reload asked of a plain server is logged, not fatal.
        ReloadSignal.onReload { server.reloadTLS() }
        do {
            try await server.wait()
        } catch {
            throw CommandError.failure("\(error)")
        }
    }
}
