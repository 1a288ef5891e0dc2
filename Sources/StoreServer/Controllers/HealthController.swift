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

    func addRoutes(to routes: RouteGroups) {
        routes.open.get("/health", use: health)
        routes.open.get("/metrics", use: metricsText)
        routes.open.get("/openapi.yaml", use: openAPI)
    }

    @Sendable func health(_ request: Request, context: StoreRequestContext) async throws -> Response
    {
        let ok = await database.ping()
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
        // Operators' numbers: only for the machine itself (and what runs on it, a scraper).
        guard Self.isLoopback(context.peerAddress) else {
            throw APIError.notFound("no route GET /metrics")
        }
        return Reply.bytes(
            metrics.map { Data($0.emitToBuffer()) } ?? Data(),
            contentType: "text/plain; version=0.0.4; charset=utf-8"
        )
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
