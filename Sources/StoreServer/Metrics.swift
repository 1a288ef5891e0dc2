internal import CoreMetrics
internal import Foundation
internal import Prometheus
internal import Synchronization

/// The process's metrics: swift-metrics bootstrapped once with a Prometheus registry, which
/// `/metrics` renders in the text exposition format.
enum StoreMetrics {
    private static let registry = PrometheusCollectorRegistry()
    private static let bootstrapped = Mutex(false)

    /// Routes swift-metrics to the registry (once per process; later calls do nothing, and a
    /// process that bootstrapped its own backend first keeps it).
    static func bootstrap() {
        bootstrapped.withLock { done in
            guard !done else { return }
            done = true
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        }
    }

    /// The registry's current values, Prometheus text format.
    static func render() -> Data {
        Data(registry.emitToBuffer())
    }
}
