internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models
internal import Prometheus

/// `GET /health`, `GET /metrics` and `GET /openapi.yaml`: public, no database needed but for
/// the health check's ping.
struct HealthController {
    let database: StoreDatabase
    /// The registry the executable routed swift-metrics to; nil renders an empty page.
    let metrics: PrometheusCollectorRegistry?
    /// Whether `/metrics` has a listener of its own (then this one answers 404).
    let separateMetrics: Bool
    /// Proxies whose requests are forwarded clients', never the machine's own.
    let proxies: TrustedProxies

    func addRoutes(to routes: RouteGroups) {
        routes.open.get("/health", use: health)
        routes.open.get("/metrics", use: metricsText)
        routes.open.get("/openapi.yaml", use: openAPI)
    }

    /// How long `/health` waits for the database's answer before it says 503: a load
    /// balancer's check, and an operator's curl, get an answer in bounded time even when a
    /// connection attempt or a pooled request would wait longer (the pool's own limit is 10 s).
    static let databaseLimit: Duration = .seconds(1)

    @Sendable func health(_ request: Request, context: StoreRequestContext) async throws -> Response
    {
        let ok = await database.isReachable(within: Self.databaseLimit)
        let health = ServerHealth(
            status: ok ? "ok" : "unavailable",
            database: database.kind.rawValue,
            version: SuiteVersion.current
        )
        return try Reply.json(health, status: ok ? .ok : .serviceUnavailable)
    }

    @Sendable func metricsText(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        // Operators' numbers: on their own listener, else only for the machine itself (a
        // scraper on it), never for what a local proxy forwards.
        guard !separateMetrics, Self.isLoopback(context.peerAddress),
            !proxies.trusts(context.peerAddress)
        else {
            throw APIError.notFound("no route GET /metrics")
        }
        return MetricsListener.page(metrics)
    }

    /// Whether `address` is the machine itself (127.0.0.0/8, ::1, or IPv4 on IPv6).
    static func isLoopback(_ address: String) -> Bool {
        TrustedProxies([TrustedProxies.Range("127.0.0.0/8")!, TrustedProxies.Range("::1")!])
            .trusts(address)
    }

    @Sendable func openAPI(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        Reply.bytes(
            OpenAPIDocument.bytes,
            contentType: "application/yaml; charset=utf-8",
            headers: [(.cacheControl, "no-cache")]
        )
    }
}
