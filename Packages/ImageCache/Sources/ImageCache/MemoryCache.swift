public import Synchronization

/// A thread-safe in-memory cache with a cost limit and W-TinyLFU admission.
///
/// New entries enter a small LRU *window* (1% of the cost by default). What leaves the window
/// is a candidate for the *main* space, a segmented LRU (80% *protected* for entries hit
/// again, the rest *probation*): it is admitted only if a count-min sketch says it has been
/// asked for more often than the entry main would evict for it. So a scan of images seen once
/// passes through the window without flushing the popular ones, where plain LRU would lose
/// them all (see the README for measured hit ratios against LRU).
///
/// Every operation takes one `Mutex`. The policy (lists, sketch, costs) is non-generic code;
/// only the value slot is generic, and ``value(forKey:)`` is inlinable so that callers get a
/// specialized hit path: a dictionary lookup on the key's precomputed hash, four counter
/// updates and a list move.
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

        /// No counts.
        public init() {}
    }

    @usableFromInline
    let storage: Mutex<MemoryStorage<Value>>

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
            MemoryStorage(
                policy: AdmissionPolicy(
                    costLimit: costLimit,
                    windowFraction: fraction,
                    expectedCount: expectedCount
                )
            )
        )
    }

    /// The value for `key`, recording the access; nil when it is not held.
    @inlinable
    public func value(forKey key: CacheKey) -> Value? {
        storage.withLock { storage in
            guard let node = storage.policy.lookup(key) else { return nil }
            return storage.values[Int(node)]
        }
    }

    /// Whether `key` is held, without recording an access.
    public func contains(_ key: CacheKey) -> Bool {
        storage.withLock { $0.policy.index[key] != nil }
    }

    /// Stores `value` under `key` with its `cost`, evicting by the admission policy until the
    /// total is within ``costLimit``. A value costing more than the limit is not stored (and
    /// any older value for the key is removed).
    public func setValue(_ value: Value, forKey key: CacheKey, cost: Int) {
        // Released after the lock is dropped: a value's deinit may be costly.
        let released = storage.withLock { storage -> [Value] in
            let (node, evicted) = storage.policy.insert(key, cost: max(cost, 0))
            var released: [Value] = []
            if let node {
                let slot = Int(node)
                if slot == storage.values.count {
                    storage.values.append(value)
                } else {
                    if let old = storage.values[slot] { released.append(old) }
                    storage.values[slot] = value
                }
            }
            for victim in evicted {
                if let old = storage.values[Int(victim)] { released.append(old) }
                storage.values[Int(victim)] = nil
            }
            return released
        }
        _ = released
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    public func removeValue(forKey key: CacheKey) -> Value? {
        storage.withLock { storage in
            guard let node = storage.policy.remove(key) else { return nil }
            let value = storage.values[Int(node)]
            storage.values[Int(node)] = nil
            return value
        }
    }

    /// Removes every value (the popularity history stays).
    public func removeAll() {
        let old = storage.withLock { storage in
            storage.policy.clear()
            let old = storage.values
            storage.values = []
            return old
        }
        _ = old
    }

    /// The number of entries held.
    public var count: Int { storage.withLock { $0.policy.index.count } }

    /// The sum of the held entries' costs.
    public var totalCost: Int { storage.withLock { $0.policy.totalCost } }

    /// Counters since the cache was created.
    public var statistics: Statistics {
        storage.withLock { storage in
            let policy = storage.policy
            var statistics = Statistics()
            statistics.hits = policy.hits
            statistics.misses = policy.misses
            statistics.insertions = policy.insertions
            statistics.evictions = policy.evictions
            statistics.rejections = policy.rejections
            statistics.count = policy.index.count
            statistics.totalCost = policy.totalCost
            return statistics
        }
    }
}

/// The values, by the policy's node numbers, beside the (non-generic) policy.
@usableFromInline
struct MemoryStorage<Value> {
    @usableFromInline var policy: AdmissionPolicy
    @usableFromInline var values: [Value?] = []

    init(policy: AdmissionPolicy) {
        self.policy = policy
    }
}

/// Where a node lives.
@usableFromInline
enum Region: UInt8 {
    case window, probation, protected
}

/// A node's place in its region's list, its cost and its region.
@usableFromInline
struct Link {
    var previous: Int32 = -1
    var next: Int32 = -1
    var cost: Int
    var region: Region = .window
}

/// The two ends of a region's list, least recently used at `head`.
@usableFromInline
struct ListEnds {
    var head: Int32 = -1
    var tail: Int32 = -1
    var cost = 0
}

/// W-TinyLFU over node numbers: the keys, costs and links of the entries, the three
/// regions' lists, the frequency sketch and the counters. Non-generic, so that it runs
/// without generic metadata lookups whatever the value type.
@usableFromInline
struct AdmissionPolicy {
    @usableFromInline var index: [CacheKey: Int32] = [:]
    var keys: [CacheKey] = []
    /// Each node's links, cost and region, together so that a move touches one cache line.
    var links: [Link] = []
    var free: [Int32] = []
    var window = ListEnds()
    var probation = ListEnds()
    var protected = ListEnds()
    var sketch: FrequencySketch
    let costLimit: Int
    let windowLimit: Int
    let protectedLimit: Int
    @usableFromInline var totalCost = 0
    var hits = 0
    var misses = 0
    var insertions = 0
    var evictions = 0
    var rejections = 0
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
        let link = links[slot]
        if link.previous >= 0 { links[Int(link.previous)].next = link.next }
        if link.next >= 0 { links[Int(link.next)].previous = link.previous }
        withList(link.region) { list in
            if list.head == node { list.head = link.next }
            if list.tail == node { list.tail = link.previous }
            list.cost -= link.cost
        }
        links[slot].previous = -1
        links[slot].next = -1
    }

    /// Appends `node` at the most recently used end of `region`.
    private mutating func append(_ node: Int32, to region: Region) {
        let slot = Int(node)
        let cost = links[slot].cost
        let oldTail = withList(region) { list -> Int32 in
            let oldTail = list.tail
            list.tail = node
            if list.head < 0 { list.head = node }
            list.cost += cost
            return oldTail
        }
        links[slot].region = region
        links[slot].previous = oldTail
        links[slot].next = -1
        if oldTail >= 0 { links[Int(oldTail)].next = node }
    }

    private mutating func move(_ node: Int32, to region: Region) {
        unlink(node)
        append(node, to: region)
    }

    // MARK: Operations

    /// Records an access to `key`; its node when it is held.
    @usableFromInline
    mutating func lookup(_ key: CacheKey) -> Int32? {
        sketch.increment(key.low)
        guard let node = index[key] else {
            misses += 1
            return nil
        }
        hits += 1
        touch(node)
        return node
    }

    /// The hit rules of the segmented LRU.
    private mutating func touch(_ node: Int32) {
        switch links[Int(node)].region {
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

    /// Stores `key` at `cost`: returns the node for its value (nil when it costs more than
    /// the whole limit) and the nodes whose values leave.
    mutating func insert(_ key: CacheKey, cost: Int) -> (node: Int32?, evicted: [Int32]) {
        insertions += 1
        sketch.increment(key.low)
        if cost > costLimit {
            if let node = remove(key) { return (nil, [node]) }
            return (nil, [])
        }
        let node: Int32
        if let existing = index[key] {
            node = existing
            let slot = Int(node)
            let delta = cost - links[slot].cost
            links[slot].cost = cost
            withList(links[slot].region) { $0.cost += delta }
            totalCost += delta
            touch(node)
        } else {
            if let reused = free.popLast() {
                node = reused
                keys[Int(node)] = key
                links[Int(node)] = Link(cost: cost)
            } else {
                node = Int32(keys.count)
                keys.append(key)
                links.append(Link(cost: cost))
            }
            index[key] = node
            append(node, to: .window)
            totalCost += cost
            sketch.ensureCapacity(index.count)
        }
        var evicted: [Int32] = []
        evict(into: &evicted)
        return (node, evicted)
    }

    /// Forgets `key`; returns its node.
    mutating func remove(_ key: CacheKey) -> Int32? {
        guard let node = index[key] else { return nil }
        discard(node)
        return node
    }

    private mutating func discard(_ node: Int32) {
        let slot = Int(node)
        unlink(node)
        totalCost -= links[slot].cost
        index[keys[slot]] = nil
        links[slot].cost = 0
        free.append(node)
    }

    mutating func clear() {
        index.removeAll()
        keys.removeAll()
        links.removeAll()
        free.removeAll()
        window = ListEnds()
        probation = ListEnds()
        protected = ListEnds()
        totalCost = 0
    }

    /// Moves the window's overflow into probation as candidates, then evicts until the total
    /// is within the limit: each candidate against probation's least recently used entry,
    /// the less frequent of the two leaving (Caffeine's `evictFromMain`).
    private mutating func evict(into evicted: inout [Int32]) {
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
                let following = links[Int(candidate)].next
                evictNode(candidate, into: &evicted)
                candidate = following
                continue
            }
            if admit(candidate: keys[Int(candidate)], victim: keys[Int(victim)]) {
                evictNode(victim, into: &evicted)
            } else {
                let following = links[Int(candidate)].next
                rejections += 1
                evictNode(candidate, into: &evicted)
                candidate = following
            }
        }
    }

    private mutating func evictNode(_ node: Int32, into evicted: inout [Int32]) {
        evictions += 1
        discard(node)
        evicted.append(node)
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
