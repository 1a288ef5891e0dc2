internal import Auth
public import Foundation
public import Prometheus

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
    /// Accepted signature age in seconds (the replay window, judged by the database's clock).
    public var signatureWindow: Int64 = 300
    /// The longest a session lasts from its sign-in, refreshes included.
    public var sessionLifetime: TimeInterval = 30 * 86_400
    /// Connections per event loop to PostgreSQL.
    public var databaseConnections = 4
    /// How long a connection may stay silent (between requests, and while a request's head or
    /// body is being read) before it is closed: a client that stalls half-way through a body
    /// is cut off after this.
    public var idleTimeout: Duration = .seconds(30)
    /// How long a graceful stop waits for the requests in flight before it closes what is left.
    public var drainTimeout: Duration = .seconds(10)
    /// The registry the executable routed swift-metrics to, rendered by `GET /metrics`; nil
    /// serves an empty page (the library never bootstraps a metrics backend itself).
    public var metrics: PrometheusCollectorRegistry?
    /// systemd's notify socket (`Type=notify`): `READY=1` once listening, watchdog pings while
    /// the event loops and the database answer. Nil outside systemd.
    public var notifier: SystemdNotifier?
    /// Where `GET /metrics` is served on a listener of its own (`serve --metrics-port`). Nil:
    /// on the API's listener, to peers on this machine only that are not a trusted proxy (a
    /// request a local proxy forwards is a client's, not the machine's).
    public var metricsAddress: ListenAddress?
    /// Called once the metrics listener listens, with the address it bound.
    public var onMetricsListening: (@Sendable (String, Int) -> Void)?
    /// Called once the server listens, with the address it bound (`--port 0`).
    public var onListening: (@Sendable (String, Int) -> Void)?
    /// The proxies whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed.
    public var trustedProxies = TrustedProxies()
    /// Password checks at once: in all, per user name and per client address.
    public var signInHashing = LoadLimiter.Limits(total: 8, perKey: ["user": 2, "address": 4])
    /// Connections held at once: in all, and per client address (a trusted proxy counts in
    /// the total only). A connection over a cap is answered 503 with `Retry-After` and closed.
    /// The total stays below the process's open-file limit (the unit's `LimitNOFILE`).
    public var connections = LoadLimiter.Limits(total: 16_384, perKey: ["address": 256])
    /// Requests handled at once (load shedding): more are answered 503 with `Retry-After` at
    /// once (`/health` and `/metrics` never are). Nil: 16 per connection of the database pool,
    /// so a request waits for the pool at most about 16 statements' time before it is refused.
    public var maxRequestsInFlight: Int?
    /// How long one request may take from its head to the end of its body, however slowly it
    /// trickles in; then the connection is closed.
    public var bodyTimeout: Duration = .seconds(60)
    /// The time reservations are judged by: which are upcoming (search order) and the day the
    /// demo data is built around. Not the time signatures and tokens are judged by (the
    /// database's clock); tests fix it (`SHOPFLOOR_TEST_NOW` in `store-server`).
    public var calendarClock: @Sendable () -> Date = { Date() }
    /// Serve TLS (1.2 or later) with these files instead of plain HTTP: the listener speaks
    /// TLS only. The files are read when the server starts and again on
    /// ``RunningStoreServer/reloadTLS()``.
    public var tls: TLSFiles?
    /// This machine's clock (tests shift it to stand for an instance whose clock is off).
    var localClock: @Sendable () -> Date = { Date() }
    /// Faults a test injects into the database's statements (never set outside tests).
    var faults: InjectedFaults?

    /// The defaults: `127.0.0.1:8080`, `$SHOPFLOOR_HOME/server/store.sqlite`.
    public init() {}

    /// A host and port to listen on (port 0: any free port).
    public struct ListenAddress: Sendable, Equatable {
        /// The address to bind.
        public var host: String
        /// The port; 0 picks a free one.
        public var port: Int

        /// `host:port`.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// The lowest password cost (PBKDF2 iterations) outside tests: Auth's floor. Below it a
    /// wrong password answers faster than an unknown user, so only tests and benchmarks that
    /// say so may go lower.
    public static var minimumPasswordIterations: Int { PasswordHasher.minimumIterations }
}
