import Foundation
import ImageCache

/// Zipf-distributed keys over `universe` items (exponent `skew`), with scans of keys seen
/// once mixed in: what a catalog sees when popular products are browsed and someone pages
/// through the whole range once.
struct SkewedTrace {
    var keys: [Int]

    /// - Parameters:
    ///   - requests: Zipf requests in all.
    ///   - scanEvery: Zipf requests between two scans.
    ///   - scanLength: keys in each scan (all new, never asked for again).
    init(
        universe: Int,
        skew: Double,
        requests: Int,
        scanEvery: Int,
        scanLength: Int,
        seed: UInt64
    ) {
        var cumulative = [Double](repeating: 0, count: universe)
        var sum = 0.0
        for rank in 0..<universe {
            sum += 1 / pow(Double(rank + 1), skew)
            cumulative[rank] = sum
        }
        var generator = SeededGenerator(seed: seed)
        // Ranks are shuffled into keys so that popularity has nothing to do with key order.
        var permutation = Array(0..<universe)
        permutation.shuffle(using: &generator)
        var keys: [Int] = []
        keys.reserveCapacity(requests + requests / scanEvery * scanLength)
        var nextScanKey = universe
        for index in 0..<requests {
            let target = Double.random(in: 0..<sum, using: &generator)
            var low = 0
            var high = universe - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] < target { low = middle + 1 } else { high = middle }
            }
            keys.append(permutation[low])
            if (index + 1) % scanEvery == 0 {
                for _ in 0..<scanLength {
                    keys.append(nextScanKey)
                    nextScanKey += 1
                }
            }
        }
        self.keys = keys
    }
}

/// Plain LRU with unit costs: what a user would pick instead (NSCache-like).
struct PlainLRU {
    private var index: [Int: Int] = [:]
    private var keys: [Int] = []
    private var prev: [Int] = []
    private var next: [Int] = []
    private var head = -1
    private var tail = -1
    private var free: [Int] = []
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// True on a hit; on a miss the key is inserted (evicting the least recently used).
    mutating func access(_ key: Int) -> Bool {
        if let node = index[key] {
            unlink(node)
            append(node)
            return true
        }
        if index.count >= capacity {
            let victim = head
            unlink(victim)
            index[keys[victim]] = nil
            free.append(victim)
        }
        let node: Int
        if let reused = free.popLast() {
            node = reused
            keys[node] = key
        } else {
            node = keys.count
            keys.append(key)
            prev.append(-1)
            next.append(-1)
        }
        index[key] = node
        append(node)
        return false
    }

    private mutating func unlink(_ node: Int) {
        if prev[node] >= 0 { next[prev[node]] = next[node] } else { head = next[node] }
        if next[node] >= 0 { prev[next[node]] = prev[node] } else { tail = prev[node] }
        prev[node] = -1
        next[node] = -1
    }

    private mutating func append(_ node: Int) {
        prev[node] = tail
        next[node] = -1
        if tail >= 0 { next[tail] = node } else { head = node }
        tail = node
    }
}

/// Hit ratios of W-TinyLFU (``MemoryCache``) and plain LRU on `trace`, both holding
/// `capacity` unit-cost entries.
func hitRatios(_ trace: SkewedTrace, capacity: Int) -> (tinyLFU: Double, lru: Double) {
    let cache = MemoryCache<Int>(costLimit: capacity, expectedCount: capacity)
    var lru = PlainLRU(capacity: capacity)
    let keys = trace.keys.map { CacheKey("https://images.example/\($0).png") }
    var cacheHits = 0
    var lruHits = 0
    for (index, key) in keys.enumerated() {
        if cache.value(forKey: key) != nil {
            cacheHits += 1
        } else {
            cache.setValue(index, forKey: key, cost: 1)
        }
        if lru.access(trace.keys[index]) { lruHits += 1 }
    }
    let total = Double(keys.count)
    return (Double(cacheHits) / total, Double(lruHits) / total)
}
