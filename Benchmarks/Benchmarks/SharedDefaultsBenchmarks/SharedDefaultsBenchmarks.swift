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
        maxDuration: .seconds(3),
        // More than 10% worse at p90 than Benchmarks/Thresholds fails `make bench`.
        thresholds: [
            .wallClock: .init(relative: [.p90: 10]),
            .mallocCountTotal: .init(relative: [.p90: 10]),
        ]
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
    // SharedDefaults keeps its own JSON parser and writer rather than JSONDecoder and
    // JSONEncoder over DefaultsValue's Codable conformance: those read 2.0 and -3e2 as
    // integers, write 3.0 as 3 (so an export no longer imports with its types), and have no
    // nesting limit of ours. These two pairs show what the choice costs or saves in speed.
    Benchmark("DefaultsValue JSON parse, own parser (200-key suite)") { benchmark in
        let data = suiteJSON
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try DefaultsValue(jsonData: data)) }
    }

    Benchmark("DefaultsValue JSON parse, JSONDecoder (200-key suite)") { benchmark in
        let data = suiteJSON
        let decoder = JSONDecoder()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode(DefaultsValue.self, from: data))
        }
    }

    Benchmark("DefaultsValue JSON write, own writer (200-key suite)") { benchmark in
        let value = try DefaultsValue(jsonData: suiteJSON)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(value.jsonText()) }
    }

    Benchmark("DefaultsValue JSON write, JSONEncoder (200-key suite)") { benchmark in
        let value = try DefaultsValue(jsonData: suiteJSON)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try encoder.encode(value)) }
    }
}

/// A suite of 200 settings as `export --json` writes it: strings, integers, doubles, booleans,
/// lists and small dictionaries.
private let suiteJSON: Data = {
    var entries: [String: DefaultsValue] = [:]
    for index in 0..<200 {
        switch index % 5 {
        case 0:
            entries["string\(index)"] = .string("https://store-\(index).example/path?q=\(index)")
        case 1: entries["int\(index)"] = .int(index * 1_000_003)
        case 2: entries["double\(index)"] = .double(Double(index) / 7)
        case 3: entries["list\(index)"] = [.int(index), "two", 3.5, true]
        default:
            entries["dict\(index)"] = [
                "enabled": true, "limit": .int(index), "name": .string("n\(index)"),
            ]
        }
    }
    return Data(DefaultsValue.dictionary(entries).jsonText(pretty: true).utf8)
}()
