internal import Foundation
internal import Hummingbird
internal import Logging
internal import NIOCore
internal import Prometheus
internal import ServiceLifecycle

/// `GET /metrics` on a listener of its own (`serve --metrics-port`), apart from the API: an
/// operator binds it to an address only the scraper reaches, so no client of the API, and no
/// proxy in front of it, ever sees the numbers. It serves nothing else (404 for any other path)
/// and stops with the server.
enum MetricsListener {
    /// The Prometheus text of `registry` (empty without one).
    static func page(_ registry: PrometheusCollectorRegistry?) -> Response {
        Reply.bytes(
            registry.map { Data($0.emitToBuffer()) } ?? Data(),
            contentType: "text/plain; version=0.0.4; charset=utf-8"
        )
    }

    /// The listener on `address`, rendering `registry`; `onListening` gets the bound address.
    static func application(
        address: StoreServerConfiguration.ListenAddress,
        registry: PrometheusCollectorRegistry?,
        idleTimeout: Duration,
        onListening: (@Sendable (String, Int) -> Void)?,
        logger: Logger
    ) -> some Service {
        let router = Router()
        router.get("/metrics") { _, _ in page(registry) }
        var application = Application(
            router: router,
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: [HTTPEdgeHandler()],
                    idleTimeout: TimeAmount(idleTimeout)
                )
            ),
            configuration: .init(
                address: .hostname(address.host, port: address.port),
                serverName: nil
            ),
            onServerRunning: { channel in
                let bound = channel.localAddress
                onListening?(bound?.ipAddress ?? address.host, bound?.port ?? address.port)
            },
            logger: logger
        )
        application.logger.logLevel = logger.logLevel
        return application
    }
}
