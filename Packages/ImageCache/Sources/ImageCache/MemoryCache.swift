internal import Synchronization

/// A thread-safe in-memory cache with a cost limit and W-TinyLFU admission.
///
/// New entries enter a small LRU *window* (1% of the cost by default). What leaves the window
/// is a candidate for the *main* space, a segmented LRU (80% *protected* for entries hit
/// again, the rest *probation*): it is admitted only if a count-min sketch says it has been
/// asked for more often than the entry main would evict for it. So a scan of images seen once
/// passes through the window without flushing the popular ones, where plain LRU would lose
/// them all (see the README for measured hit ratios against LRU).
///
/// Every operation takes one `Mutex`; a hit is a dictionary lookup on the key's precomputed
/// hash, a few counter updates and a list move.
public final class MemoryCache<Value: Sendable>: Sendable {
    /// Counters since the cache was created.
    public struct Statistics: Sendable, Equatable {
        /// Lookups that found a value.
        public var hits = 0
        /// Lookups that found nothing.
        public var misses = 0
        /// Entries stored (new keys and replacements).
        public var insertions = 0
        /// Entries removed to keep the cost under the limit (admitted ones and refused
        /// candidates alike).
        public var evictions = 0
        /// Candidates refused by the admission policy (counted in ``evictions`` too).
        public var rejections = 0
        /// Entries held now.
        public var count = 0
        /// The sum of the held entries' costs.
        public var totalCost = 0
    }

    private let storage: Mutex<Storage<Value>>

    /// The largest total cost the cache holds.
    public let costLimit: Int

    /// Creates an empty cache.
    ///
    /// - Parameters:
    ///   - costLimit: the largest total cost held (for images, bytes of decoded pixels).
    ///   - windowFraction: the share of `costLimit` for the admission window, 0.001–0.5.
    ///   - expectedCount: about how many entries the cache will hold; sizes the frequency
    ///     sketch up front (it grows on its own when more are held).
    public init(costLimit: Int, windowFraction: Double = 0.01, expectedCount: Int = 1024) {
        precondition(costLimit > 0, "MemoryCache costLimit must be positive")
        self.costLimit = costLimit
        let fraction = min(max(windowFraction, 0.001), 0.5)
        storage = Mutex(
            Storage(costLimit: costLimit, windowFraction: fraction, expectedCount: expectedCount)
        )
    }

    /// The value for `key`, recording the access; nil when it is not held.
    public func value(forKey key: CacheKey) -> Value? {
        storage.withLock { $0.lookup(key) }
    }

    /// Whether `key` is held, without recording an access.
    public func contains(_ key: CacheKey) -> Bool {
        storage.withLock { $0.index[key] != nil }
    }

    /// Stores `value` under `key` with its `cost`, evicting by the admission policy until the
    /// total is within ``costLimit``. A value costing more than the limit is not stored (and
    /// any older value for the key is removed).
    public func setValue(_ value: Value, forKey key: CacheKey, cost: Int) {
        // Evicted values are released after the lock is dropped: their deinit may be costly.
        let evicted = storage.withLock { $0.insert(value, key: key, cost: max(cost, 0)) }
        _ = evicted
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    public func removeValue(forKey key: CacheKey) -> Value? {
        storage.withLock { $0.remove(key) }
    }

    /// Removes every value (the popularity history stays).
    public func removeAll() {
        let old = storage.withLock { storage in
            let old = storage.nodes
            storage.clear()
            return old
        }
        _ = old
    }

    /// The number of entries held.
    public var count: Int { storage.withLock { $0.index.count } }

    /// The sum of the held entries' costs.
    public var totalCost: Int { storage.withLock { $0.totalCost } }

    /// Counters since the cache was created.
    public var statistics: Statistics {
        storage.withLock { storage in
            var statistics = storage.statistics
            statistics.count = storage.index.count
            statistics.totalCost = storage.totalCost
            return statistics
        }
    }
}

/// Where a node lives.
enum Region: UInt8 {
    case window, probation, protected
}

/// One entry; `prev`/`next` link it into its region's list (-1 at the ends).
struct Node<Value> {
    var key: CacheKey
    var value: Value?
    var cost: Int
    var prev: Int32
    var next: Int32
    var region: Region
}

/// The two ends of a region's list, least recently used at `head`.
struct ListEnds {
    var head: Int32 = -1
    var tail: Int32 = -1
    var cost = 0
}

/// The cache's state, only ever used under the `Mutex`.
struct Storage<Value: Sendable> {
    var index: [CacheKey: Int32] = [:]
    var nodes: [Node<Value>] = []
    var free: [Int32] = []
    var window = ListEnds()
    var probation = ListEnds()
    var protected = ListEnds()
    var sketch: FrequencySketch
    let costLimit: Int
    let windowLimit: Int
    let protectedLimit: Int
    var totalCost = 0
    var statistics = MemoryCache<Value>.Statistics()
    var random: UInt64 = 0x2545_F491_4F6C_DD1D

    init(costLimit: Int, windowFraction: Double, expectedCount: Int) {
        self.costLimit = costLimit
        windowLimit = max(1, Int(Double(costLimit) * windowFraction))
        protectedLimit = Int(Double(costLimit - windowLimit) * 0.8)
        sketch = FrequencySketch(capacity: expectedCount)
    }

    // MARK: Lists

    private mutating func withList<T>(_ region: Region, _ body: (inout ListEnds) -> T) -> T {
        switch region {
        case .window: body(&window)
        case .probation: body(&probation)
        case .protected: body(&protected)
        }
    }

    private mutating func unlink(_ node: Int32) {
        let slot = Int(node)
        let prev = nodes[slot].prev
        let next = nodes[slot].next
        let cost = nodes[slot].cost
        if prev >= 0 { nodes[Int(prev)].next = next }
        if next >= 0 { nodes[Int(next)].prev = prev }
        withList(nodes[slot].region) { list in
            if list.head == node { list.head = next }
            if list.tail == node { list.tail = prev }
            list.cost -= cost
        }
        nodes[slot].prev = -1
        nodes[slot].next = -1
    }

    /// Appends `node` at the most recently used end of `region`.
    private mutating func append(_ node: Int32, to region: Region) {
        let slot = Int(node)
        nodes[slot].region = region
        let cost = nodes[slot].cost
        let oldTail = withList(region) { list -> Int32 in
            let oldTail = list.tail
            list.tail = node
            if list.head < 0 { list.head = node }
            list.cost += cost
            return oldTail
        }
        nodes[slot].prev = oldTail
        nodes[slot].next = -1
        if oldTail >= 0 { nodes[Int(oldTail)].next = node }
    }

    private mutating func move(_ node: Int32, to region: Region) {
        unlink(node)
        append(node, to: region)
    }

    // MARK: Operations

    mutating func lookup(_ key: CacheKey) -> Value? {
        sketch.increment(key.low)
        guard let node = index[key] else {
            statistics.misses += 1
            return nil
        }
        statistics.hits += 1
        touch(node)
        return nodes[Int(node)].value
    }

    /// The hit rules of the segmented LRU.
    private mutating func touch(_ node: Int32) {
        switch nodes[Int(node)].region {
        case .window:
            if window.tail != node { move(node, to: .window) }
        case .probation:
            move(node, to: .protected)
            while protected.cost > protectedLimit, protected.head >= 0, protected.head != node {
                move(protected.head, to: .probation)
            }
        case .protected:
            if protected.tail != node { move(node, to: .protected) }
        }
    }

    mutating func insert(_ value: Value, key: CacheKey, cost: Int) -> [Value] {
        statistics.insertions += 1
        sketch.increment(key.low)
        if cost > costLimit {
            if let old = remove(key) { return [old] }
            return []
        }
        var evicted: [Value] = []
        if let node = index[key] {
            let slot = Int(node)
            if let old = nodes[slot].value { evicted.append(old) }
            let region = nodes[slot].region
            let delta = cost - nodes[slot].cost
            nodes[slot].value = value
            nodes[slot].cost = cost
            withList(region) { $0.cost += delta }
            totalCost += delta
            touch(node)
        } else {
            let node: Int32
            let fresh = Node(
                key: key,
                value: value,
                cost: cost,
                prev: -1,
                next: -1,
                region: .window
            )
            if let reused = free.popLast() {
                node = reused
                nodes[Int(reused)] = fresh
            } else {
                node = Int32(nodes.count)
                nodes.append(fresh)
            }
            index[key] = node
            append(node, to: .window)
            totalCost += cost
            sketch.ensureCapacity(index.count)
        }
        evict(into: &evicted)
        return evicted
    }

    mutating func remove(_ key: CacheKey) -> Value? {
        guard let node = index[key] else { return nil }
        return discard(node)
    }

    @discardableResult
    private mutating func discard(_ node: Int32) -> Value? {
        let slot = Int(node)
        unlink(node)
        totalCost -= nodes[slot].cost
        index[nodes[slot].key] = nil
        let value = nodes[slot].value
        nodes[slot].value = nil
        nodes[slot].cost = 0
        free.append(node)
        return value
    }

    mutating func clear() {
        index.removeAll()
        nodes.removeAll()
        free.removeAll()
        window = ListEnds()
        probation = ListEnds()
        protected = ListEnds()
        totalCost = 0
    }

    /// Moves the window's overflow into probation as candidates, then evicts until the total
    /// is within the limit: each candidate against probation's least recently used entry,
    /// the less frequent of the two leaving (Caffeine's `evictFromMain`).
    private mutating func evict(into evicted: inout [Value]) {
        var candidate: Int32 = -1
        while window.cost > windowLimit, window.head >= 0 {
            let node = window.head
            move(node, to: .probation)
            if candidate < 0 { candidate = node }
        }
        while totalCost > costLimit {
            if candidate < 0 {
                // No candidate left (an entry grew, or the window alone is over): plain LRU.
                let victim =
                    probation.head >= 0
                    ? probation.head : protected.head >= 0 ? protected.head : window.head
                guard victim >= 0 else { break }
                evictNode(victim, into: &evicted)
                continue
            }
            // Candidates sit at probation's most recent end, so reaching one from the head
            // means only candidates are left there: fight protected's oldest instead.
            var victim = probation.head
            if victim == candidate { victim = protected.head }
            if victim < 0 {
                let next = nodes[Int(candidate)].next
                evictNode(candidate, into: &evicted)
                candidate = next
                continue
            }
            if admit(candidate: nodes[Int(candidate)].key, victim: nodes[Int(victim)].key) {
                evictNode(victim, into: &evicted)
            } else {
                let next = nodes[Int(candidate)].next
                statistics.rejections += 1
                evictNode(candidate, into: &evicted)
                candidate = next
            }
        }
    }

    private mutating func evictNode(_ node: Int32, into evicted: inout [Value]) {
        statistics.evictions += 1
        if let value = discard(node) { evicted.append(value) }
    }

    /// TinyLFU's rule: the more frequent key wins; a warm candidate that loses is still
    /// admitted 1 time in 128, so that an attacker cannot pin a victim by inflating its
    /// counters (hash flooding).
    private mutating func admit(candidate: CacheKey, victim: CacheKey) -> Bool {
        let candidateFrequency = sketch.frequency(candidate.low)
        let victimFrequency = sketch.frequency(victim.low)
        if candidateFrequency > victimFrequency { return true }
        if candidateFrequency >= 6 {
            random ^= random << 13
            random ^= random >> 7
            random ^= random << 17
            return random & 127 == 0
        }
        return false
    }
}
