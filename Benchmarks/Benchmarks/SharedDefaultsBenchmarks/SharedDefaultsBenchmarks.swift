import Benchmark
import Foundation
import SharedDefaults

// SharedStore against Foundation's UserDefaults(suiteName:) in the same run: a read from the
// in-memory snapshot, and a durable write (SharedStore.set returns once flushed;
// UserDefaults needs set + synchronize()). Both live in a temporary directory. The
// cross-process figures (concurrent increments kept, change-notification latency) come from
// Benchmarks/compare/shared-defaults-vs-userdefaults.sh.

private let root: URL = {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("shared-defaults-bench-\(getpid())", isDirectory: true)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    chmod(url.path, 0o700)
    setenv("HOME", url.path, 1)
    return url
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(3))

    Benchmark("SharedStore read (snapshot)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let store = try SharedStore(suite: "bench-read", root: root)
        try store.set("https://store.example", forKey: "serverURL")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(store.string(forKey: "serverURL"))
        }
    }

    Benchmark("UserDefaults read", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let defaults = UserDefaults(suiteName: "bench-read")!
        defaults.set("https://store.example", forKey: "serverURL")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(defaults.string(forKey: "serverURL"))
        }
    }

    Benchmark("SharedStore durable write", configuration: .init(maxIterations: 2_000)) { benchmark in
        let store = try SharedStore(suite: "bench-write", root: root)
        var value = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            value += 1
            try store.set(value, forKey: "counter")
        }
    }

    Benchmark("UserDefaults write + synchronize", configuration: .init(maxIterations: 2_000)) { benchmark in
        let defaults = UserDefaults(suiteName: "bench-write")!
        var value = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            value += 1
            defaults.set(value, forKey: "counter")
            blackHole(defaults.synchronize())
        }
    }

    Benchmark("SharedStore increment", configuration: .init(maxIterations: 2_000)) { benchmark in
        let store = try SharedStore(suite: "bench-increment", root: root)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.increment("n"))
        }
    }
}
