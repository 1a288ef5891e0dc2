import Benchmark
import Foundation
import ImageCache
import Logging

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// ImageCache against what a user would pick instead, in the same run:
// - memory hit: MemoryCache (W-TinyLFU) vs Foundation's NSCache, both warm with 10,000 keys;
// - disk hit of a 48 KB entry (open, two preads, XXH64 of header and body) vs reading the
//   same bytes with Data(contentsOf:) (no checksum, no metadata);
// - opening a 100,000-entry disk cache vs listing and stat-ing its folder, which is what a
//   cache without an index does at start-up;
// - hit ratio on a Zipf trace with scans: W-TinyLFU vs plain LRU of the same size.
// Targets (issue 14): memory hit ≤ 100 ns, disk hit ≤ 25 µs, open ≤ 10 ms, hit ratio ≥ 5
// points over LRU. Static p90 thresholds for `thresholds check` are in Benchmarks/Thresholds;
// the names have no spaces because package-benchmark 1.38.1 writes threshold files with
// spaces turned into underscores but reads them by the raw name.

private let logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
private let scratch = FileManager.default.temporaryDirectory
    .appendingPathComponent("shopfloor-image-cache-bench-\(getpid())", isDirectory: true)

// MARK: Fixtures (built on first use, outside the measurement)

private let memoryKeys = (0..<10_000).map { CacheKey("https://images.example/products/\($0).png") }

private let memoryCache: MemoryCache<Data> = {
    let cache = MemoryCache<Data>(costLimit: 1 << 30, expectedCount: 10_000)
    let value = Data(count: 16)
    for key in memoryKeys { cache.setValue(value, forKey: key, cost: 1) }
    return cache
}()

// NSCache is documented thread-safe but not marked Sendable; NSString keys are immutable.
nonisolated(unsafe) private let nsCacheKeys = memoryKeys.map { $0.string as NSString }

nonisolated(unsafe) private let nsCache: NSCache<NSString, NSData> = {
    let cache = NSCache<NSString, NSData>()
    let value = NSData(data: Data(count: 16))
    for key in nsCacheKeys { cache.setObject(value, forKey: key) }
    return cache
}()

/// A pipeline whose 100 images are in memory (loaded once through an in-process transport).
private let pipelineRequests = (0..<100).map {
    ImageRequest(url: URL(string: "https://images.example/p/\($0).png")!)
}

private func warmPipeline() async -> ImagePipeline<Data> {
    let pipeline = ImagePipeline(
        transport: ClosureTransport { request in
            let response = HTTPURLResponse(
                url: request.url!,
                statusCode: 200,
                httpVersion: "HTTP/1.1",
                headerFields: ["Cache-Control": "max-age=86400"]
            )!
            return (Data(count: 48 * 1024), response)
        },
        decoder: DataDecoder(),
        diskCache: nil,
        logger: logger
    )
    for request in pipelineRequests { _ = try? await pipeline.image(for: request) }
    return pipeline
}

private let diskKeys = (0..<100).map { CacheKey("https://images.example/disk/\($0).png") }
private let diskFolder = scratch.appendingPathComponent("disk-hit")

private let diskCache: DiskCache = {
    let cache = try! DiskCache(directory: diskFolder, sizeLimit: 64 << 20, logger: logger)
    var body = Data(count: 48 * 1024)
    for (index, key) in diskKeys.enumerated() {
        body[0] = UInt8(index)
        try! cache.store(body, metadata: Data(count: 120), forKey: key)
    }
    return cache
}()

/// The same 100 bodies as plain files, for the baseline.
private let plainFiles: [URL] = {
    let folder = scratch.appendingPathComponent("plain-files")
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return (0..<100).map { index in
        let url = folder.appendingPathComponent("\(index).png")
        try! Data(count: 48 * 1024).write(to: url)
        return url
    }
}()

/// A disk cache holding 100,000 entries, written once (relaxed durability: no fsyncs).
private let openFolder: URL = {
    let folder = scratch.appendingPathComponent("open-100k")
    let cache = try! DiskCache(
        directory: folder,
        sizeLimit: 1 << 30,
        durability: .relaxed,
        logger: logger
    )
    let body = Data(count: 100)
    for index in 0..<100_000 {
        try! cache.store(body, forKey: CacheKey("https://images.example/catalog/\(index).png"))
    }
    precondition(try! cache.statistics().entryCount == 100_000)
    return folder
}()

// MARK: Hit ratio

/// Zipf(0.9) over 50,000 images, 500,000 requests, and every 50,000 requests a scan of 10,000
/// images seen once (someone paging through the whole catalog). Both caches hold 2,000.
private func hitRatios() -> (tinyLFU: Double, lru: Double, requests: Int) {
    var random = SplitMix(state: 0x5EED)
    let universe = 50_000
    var cumulative = [Double](repeating: 0, count: universe)
    var sum = 0.0
    for rank in 0..<universe {
        sum += 1 / pow(Double(rank + 1), 0.9)
        cumulative[rank] = sum
    }
    var trace: [Int] = []
    var scanKey = universe
    for index in 0..<500_000 {
        let target = Double(random.next() >> 11) / Double(1 << 53) * sum
        var low = 0
        var high = universe - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < target { low = middle + 1 } else { high = middle }
        }
        // Scatter popularity over the key space.
        trace.append(low &* 7_919 % universe)
        if (index + 1) % 50_000 == 0 {
            for _ in 0..<10_000 {
                trace.append(scanKey)
                scanKey += 1
            }
        }
    }
    let capacity = 2_000
    let cache = MemoryCache<Int>(costLimit: capacity, expectedCount: capacity)
    var lru = LRUSimulator(capacity: capacity)
    var hits = 0
    var lruHits = 0
    for key in trace {
        let cacheKey = CacheKey("https://images.example/\(key).png")
        if cache.value(forKey: cacheKey) != nil {
            hits += 1
        } else {
            cache.setValue(key, forKey: cacheKey, cost: 1)
        }
        if lru.access(key) { lruHits += 1 }
    }
    return (Double(hits) / Double(trace.count), Double(lruHits) / Double(trace.count), trace.count)
}

private struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// Plain LRU: a dictionary and a doubly linked list in arrays.
private struct LRUSimulator {
    var slots: [Int: Int] = [:]
    var keys: [Int] = []
    var before: [Int] = []
    var after: [Int] = []
    var oldest = -1
    var newest = -1
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    mutating func access(_ key: Int) -> Bool {
        if let slot = slots[key] {
            detach(slot)
            attach(slot)
            return true
        }
        let slot: Int
        if slots.count == capacity {
            slot = oldest
            detach(slot)
            slots[keys[slot]] = nil
            keys[slot] = key
        } else {
            slot = keys.count
            keys.append(key)
            before.append(-1)
            after.append(-1)
        }
        slots[key] = slot
        attach(slot)
        return false
    }

    private mutating func detach(_ slot: Int) {
        if before[slot] >= 0 { after[before[slot]] = after[slot] } else { oldest = after[slot] }
        if after[slot] >= 0 { before[after[slot]] = before[slot] } else { newest = before[slot] }
    }

    private mutating func attach(_ slot: Int) {
        before[slot] = newest
        after[slot] = -1
        if newest >= 0 { after[newest] = slot } else { oldest = slot }
        newest = slot
    }
}

private enum Metrics {
    static let tinyLFUHitRatio = BenchmarkMetric.custom(
        "W-TinyLFU hit ratio (‰)",
        polarity: .prefersLarger,
        useScalingFactor: false
    )
    static let lruHitRatio = BenchmarkMetric.custom(
        "plain LRU hit ratio (‰)",
        polarity: .prefersLarger,
        useScalingFactor: false
    )
}

// MARK: Benchmarks

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        maxDuration: .seconds(3),
        maxIterations: 10_000
    )
    // Each benchmark runs in its own process; each removes the fixtures it wrote.
    Benchmark.teardown = { try? FileManager.default.removeItem(at: scratch) }
    let perThousand = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 1_000,
        // Static p90 limits (Benchmarks/Thresholds) are hard ceilings: no tolerance.
        thresholds: [.wallClock: .init(relative: [.p90: 0], absolute: [.p90: 0])]
    )
    let single = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .syscalls],
        maxDuration: .seconds(3),
        maxIterations: 10_000,
        thresholds: [.wallClock: .init(relative: [.p90: 0], absolute: [.p90: 0])]
    )

    Benchmark("ImageCache_memory_hit", configuration: perThousand) { benchmark in
        let cache = memoryCache
        let keys = memoryKeys
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            blackHole(cache.value(forKey: keys[index % 10_000]))
        }
    }

    Benchmark("Baseline_NSCache_hit", configuration: perThousand) { benchmark in
        let cache = nsCache
        let keys = nsCacheKeys
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            blackHole(cache.object(forKey: keys[index % 10_000]))
        }
    }

    Benchmark("ImageCache_pipeline_memory_hit", configuration: perThousand) { benchmark in
        let pipeline = await warmPipeline()
        let requests = pipelineRequests
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            blackHole(try? await pipeline.image(for: requests[index % 100]))
        }
    }

    Benchmark("ImageCache_disk_hit_48_KB", configuration: single) { benchmark in
        let cache = diskCache
        let key = diskKeys[benchmark.currentIteration % 100]
        benchmark.startMeasurement()
        blackHole(cache.entry(forKey: key))
    }

    Benchmark("Baseline_Data(contentsOf:)_48_KB_file", configuration: single) { benchmark in
        let url = plainFiles[benchmark.currentIteration % 100]
        benchmark.startMeasurement()
        blackHole(try? Data(contentsOf: url))
    }

    Benchmark(
        "ImageCache_open_100,000-entry_disk_cache",
        configuration: .init(
            metrics: [.wallClock, .syscalls, .mallocCountTotal],
            maxDuration: .seconds(3),
            maxIterations: 200,
            thresholds: [.wallClock: .init(relative: [.p90: 0], absolute: [.p90: 0])]
        )
    ) { benchmark in
        let folder = openFolder
        benchmark.startMeasurement()
        // Open and read the shared counts: the cache is then ready for reads and writes.
        let cache = try! DiskCache(
            directory: folder,
            sizeLimit: 1 << 30,
            durability: .relaxed,
            logger: logger
        )
        blackHole(try! cache.statistics())
    }

    Benchmark(
        "ImageCache_open_100,000-entry_cache_+_first_store",
        configuration: .init(
            metrics: [.wallClock, .syscalls],
            maxDuration: .seconds(3),
            maxIterations: 100
        )
    ) { benchmark in
        let folder = openFolder
        let body = Data(count: 100)
        let key = CacheKey("https://images.example/new/\(benchmark.currentIteration).png")
        benchmark.startMeasurement()
        let cache = try! DiskCache(
            directory: folder,
            sizeLimit: 1 << 30,
            durability: .relaxed,
            logger: logger
        )
        try! cache.store(body, forKey: key)
        benchmark.stopMeasurement()
        try! cache.removeEntry(forKey: key)
    }

    Benchmark(
        "Baseline_list_and_stat_the_100,000-entry_folder",
        configuration: .init(
            metrics: [.wallClock, .syscalls],
            maxDuration: .seconds(5),
            maxIterations: 5
        )
    ) { benchmark in
        let folder = openFolder
        benchmark.startMeasurement()
        var bytes = 0
        let manager = FileManager.default
        for sub in try! manager.contentsOfDirectory(atPath: folder.path) where sub.count == 2 {
            let path = folder.path + "/" + sub
            for name in try! manager.contentsOfDirectory(atPath: path) {
                var info = stat()
                if stat(path + "/" + name, &info) == 0 { bytes += Int(info.st_size) }
            }
        }
        blackHole(bytes)
    }

    Benchmark(
        "ImageCache_hit_ratio_vs_plain_LRU_(Zipf_0.9_+_scans)",
        configuration: .init(
            metrics: [.wallClock, Metrics.tinyLFUHitRatio, Metrics.lruHitRatio],
            warmupIterations: 0,
            maxDuration: .seconds(60),
            maxIterations: 1
        )
    ) { benchmark in
        let (tinyLFU, lru, _) = hitRatios()
        benchmark.measurement(Metrics.tinyLFUHitRatio, Int((tinyLFU * 1000).rounded()))
        benchmark.measurement(Metrics.lruHitRatio, Int((lru * 1000).rounded()))
    }
}
