import Foundation
import ImageCache
import Testing

@Suite("Memory cache")
struct MemoryCacheTests {
    @Test("a stored value is found, and a missing one is not")
    func hitAndMiss() {
        let cache = MemoryCache<String>(costLimit: 1_000)
        cache.setValue("a", forKey: CacheKey("k1"), cost: 10)
        #expect(cache.value(forKey: CacheKey("k1")) == "a")
        #expect(cache.value(forKey: CacheKey("k2")) == nil)
        let statistics = cache.statistics
        #expect(statistics.hits == 1)
        #expect(statistics.misses == 1)
        #expect(statistics.totalCost == 10)
    }

    @Test("replacing a value updates its cost")
    func replace() {
        let cache = MemoryCache<String>(costLimit: 1_000)
        cache.setValue("a", forKey: CacheKey("k"), cost: 10)
        cache.setValue("b", forKey: CacheKey("k"), cost: 30)
        #expect(cache.value(forKey: CacheKey("k")) == "b")
        #expect(cache.totalCost == 30)
        #expect(cache.count == 1)
    }

    @Test("a value costing more than the whole limit is not stored and drops the old one")
    func oversize() {
        let cache = MemoryCache<String>(costLimit: 100)
        cache.setValue("small", forKey: CacheKey("k"), cost: 10)
        cache.setValue("huge", forKey: CacheKey("k"), cost: 101)
        #expect(cache.value(forKey: CacheKey("k")) == nil)
        #expect(cache.totalCost == 0)
    }

    @Test("the total cost never exceeds the limit, whatever the costs", arguments: [1, 7, 42])
    func costLimit(seed: UInt64) {
        let cache = MemoryCache<Int>(costLimit: 10_000)
        var generator = SeededGenerator(seed: seed)
        for index in 0..<5_000 {
            let key = CacheKey("k\(Int.random(in: 0..<800, using: &generator))")
            if Bool.random(using: &generator) {
                cache.setValue(index, forKey: key, cost: Int.random(in: 1...900, using: &generator))
            } else {
                _ = cache.value(forKey: key)
            }
            #expect(cache.totalCost <= 10_000)
        }
        #expect(cache.count > 10)
    }

    @Test("remove and removeAll empty the cache")
    func removal() {
        let cache = MemoryCache<Int>(costLimit: 100)
        for index in 0..<5 { cache.setValue(index, forKey: CacheKey("k\(index)"), cost: 1) }
        #expect(cache.removeValue(forKey: CacheKey("k2")) == 2)
        #expect(cache.value(forKey: CacheKey("k2")) == nil)
        #expect(cache.count == 4)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.value(forKey: CacheKey("k1")) == nil)
    }

    @Test("popular entries survive a scan of ten times the capacity")
    func scanResistance() {
        let cache = MemoryCache<Int>(costLimit: 100)
        let hot = (0..<50).map { CacheKey("hot\($0)") }
        for round in 0..<10 {
            for (index, key) in hot.enumerated() where cache.value(forKey: key) == nil {
                cache.setValue(round * 100 + index, forKey: key, cost: 1)
            }
        }
        for index in 0..<1_000 {
            let key = CacheKey("scan\(index)")
            if cache.value(forKey: key) == nil { cache.setValue(index, forKey: key, cost: 1) }
        }
        let kept = hot.filter { cache.contains($0) }.count
        #expect(kept >= 45, "kept \(kept) of 50 popular entries")
        // Plain LRU keeps none of them.
        var lru = PlainLRU(capacity: 100)
        for _ in 0..<10 { for index in 0..<50 { _ = lru.access(index) } }
        for index in 0..<1_000 { _ = lru.access(1_000 + index) }
        let lruKept = (0..<50).filter { lru.access($0) }.count
        #expect(lruKept == 0)
    }

    @Test("W-TinyLFU beats plain LRU by at least 5 points on a Zipf trace with scans")
    func hitRatioAgainstLRU() {
        let trace = SkewedTrace(
            universe: 20_000,
            skew: 0.9,
            requests: 100_000,
            scanEvery: 10_000,
            scanLength: 3_000,
            seed: 2024
        )
        let ratios = hitRatios(trace, capacity: 500)
        #expect(
            ratios.tinyLFU >= ratios.lru + 0.05,
            "W-TinyLFU \(ratios.tinyLFU), LRU \(ratios.lru)"
        )
    }

    @Test("many tasks reading and writing at once keep every value with its key")
    func concurrentUse() async {
        let cache = MemoryCache<String>(costLimit: 5_000)
        await withTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var generator = SeededGenerator(seed: UInt64(worker))
                    var wrong = 0
                    for _ in 0..<20_000 {
                        let number = Int.random(in: 0..<2_000, using: &generator)
                        let key = CacheKey("k\(number)")
                        if let value = cache.value(forKey: key) {
                            if value != "v\(number)" { wrong += 1 }
                        } else {
                            cache.setValue("v\(number)", forKey: key, cost: number % 17 + 1)
                        }
                    }
                    return wrong
                }
            }
            var wrong = 0
            for await count in group { wrong += count }
            #expect(wrong == 0)
        }
        #expect(cache.totalCost <= 5_000)
        let statistics = cache.statistics
        #expect(statistics.hits + statistics.misses == 8 * 20_000)
        var sum = 0
        for number in 0..<2_000 where cache.contains(CacheKey("k\(number)")) {
            sum += number % 17 + 1
        }
        #expect(sum == cache.totalCost)
    }
}
