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

// Opened once: package-benchmark runs a closure per sample, and opening (or releasing) a store
// would otherwise be measured with each sample.
private let readStore: SharedStore = {
    let store = try! SharedStore(suite: "bench-read", root: root)
    try! store.set("https://store.example", forKey: "serverURL")
    return store
}()
private let writeStore = try! SharedStore(suite: "bench-write", root: root)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        maxDuration: .seconds(3)
    )

    Benchmark("SharedStore read (snapshot)", configuration: .init(scalingFactor: .kilo)) {
        benchmark in
        let store = readStore
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

    Benchmark("SharedStore durable write", configuration: .init(maxIterations: 2_000)) {
        benchmark in
        let store = writeStore
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            // A new value each time: writing the stored value again commits nothing.
            try store.set(Int(DispatchTime.now().uptimeNanoseconds), forKey: "counter")
        }
    }

    Benchmark("UserDefaults write + synchronize", configuration: .init(maxIterations: 2_000)) {
        benchmark in
        let defaults = UserDefaults(suiteName: "bench-write")!
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            defaults.set(Int(DispatchTime.now().uptimeNanoseconds), forKey: "counter")
            blackHole(defaults.synchronize())
        }
    }

    Benchmark("SharedStore increment", configuration: .init(maxIterations: 2_000)) { benchmark in
        let store = writeStore
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.increment("n"))
        }
    }
}
