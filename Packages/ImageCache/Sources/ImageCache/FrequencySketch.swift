/// TinyLFU's popularity estimate: a count-min sketch of 4-bit counters behind a doorkeeper
/// Bloom filter, halved every `10 × capacity` additions so that old popularity fades (after
/// Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", and
/// Caffeine's `FrequencySketch`).
///
/// The doorkeeper absorbs the first sighting of each key, so the long tail of keys seen once
/// (scans) never reaches the counters; an estimate is the smallest of the key's four counters
/// plus one when the doorkeeper has seen it.
struct FrequencySketch {
    /// 16 counters of 4 bits per word.
    private var table: [UInt64]
    private var tableMask: Int
    /// The doorkeeper's bits, 64 per word.
    private var doorkeeper: [UInt64]
    private var doorkeeperMask: UInt64
    /// Additions since the last halving.
    private var additions = 0
    private var sampleSize: Int
    private(set) var capacity: Int

    private static let seeds: (UInt64, UInt64, UInt64, UInt64) = (
        0x97CB_3127_A8B1_DA27, 0xB492_B66F_BE98_F273, 0x9AE1_6A3B_2F90_404F, 0xCBF2_9CE4_8422_2325
    )

    /// A sketch sized for about `capacity` distinct keys held at once.
    init(capacity: Int) {
        let size = Self.powerOfTwo(atLeast: max(capacity, 16))
        self.capacity = size
        table = [UInt64](repeating: 0, count: size)
        tableMask = size - 1
        // 8 doorkeeper bits per key: about 2% false positives with two probes.
        doorkeeper = [UInt64](repeating: 0, count: size / 8)
        doorkeeperMask = UInt64(size * 8 - 1)
        sampleSize = 10 * size
    }

    private static func powerOfTwo(atLeast value: Int) -> Int {
        var size = 1
        while size < value { size <<= 1 }
        return size
    }

    /// Grows the sketch (forgetting what it counted) when the cache holds more keys than it
    /// was sized for.
    mutating func ensureCapacity(_ keys: Int) {
        guard keys > capacity else { return }
        self = FrequencySketch(capacity: keys * 2)
    }

    @inline(__always)
    private static func spread(_ hash: UInt64) -> UInt64 {
        var value = hash
        value = (value ^ (value &>> 33)) &* 0xFF51_AFD7_ED55_8CCD
        value = (value ^ (value &>> 33)) &* 0xC4CE_B9FE_1A85_EC53
        return value ^ (value &>> 33)
    }

    @inline(__always)
    private func index(_ hash: UInt64, _ seed: UInt64) -> Int {
        var value = (hash &+ seed) &* seed
        value &+= value &>> 32
        return Int(truncatingIfNeeded: value) & tableMask
    }

    @inline(__always)
    private func doorkeeperContains(_ hash: UInt64) -> Bool {
        let first = hash & doorkeeperMask
        let second = (hash &>> 32) & doorkeeperMask
        return doorkeeper[Int(first &>> 6)] & (1 &<< (first & 63)) != 0
            && doorkeeper[Int(second &>> 6)] & (1 &<< (second & 63)) != 0
    }

    /// The estimated number of times `hash` was added since it last faded, 0 to 16.
    func frequency(_ hash: UInt64) -> Int {
        let item = Self.spread(hash)
        let start = (item & 3) << 2
        var minimum: UInt64 = 15
        let seeds = Self.seeds
        minimum = Swift.min(minimum, counter(index(item, seeds.0), start))
        minimum = Swift.min(minimum, counter(index(item, seeds.1), start + 1))
        minimum = Swift.min(minimum, counter(index(item, seeds.2), start + 2))
        minimum = Swift.min(minimum, counter(index(item, seeds.3), start + 3))
        return Int(minimum) + (doorkeeperContains(item) ? 1 : 0)
    }

    @inline(__always)
    private func counter(_ word: Int, _ slot: UInt64) -> UInt64 {
        (table[word] &>> (slot << 2)) & 0xF
    }

    /// Records one access to `hash`.
    mutating func increment(_ hash: UInt64) {
        let item = Self.spread(hash)
        if !doorkeeperContains(item) {
            let first = item & doorkeeperMask
            let second = (item &>> 32) & doorkeeperMask
            doorkeeper[Int(first &>> 6)] |= 1 &<< (first & 63)
            doorkeeper[Int(second &>> 6)] |= 1 &<< (second & 63)
        } else {
            let start = (item & 3) << 2
            let seeds = Self.seeds
            incrementCounter(index(item, seeds.0), start)
            incrementCounter(index(item, seeds.1), start + 1)
            incrementCounter(index(item, seeds.2), start + 2)
            incrementCounter(index(item, seeds.3), start + 3)
        }
        additions += 1
        if additions >= sampleSize { fade() }
    }

    @inline(__always)
    private mutating func incrementCounter(_ word: Int, _ slot: UInt64) {
        let shift = slot << 2
        if (table[word] &>> shift) & 0xF < 15 {
            table[word] &+= 1 &<< shift
        }
    }

    /// Halves every counter and clears the doorkeeper: popularity is a recent property.
    private mutating func fade() {
        for word in table.indices {
            table[word] = (table[word] &>> 1) & 0x7777_7777_7777_7777
        }
        for word in doorkeeper.indices { doorkeeper[word] = 0 }
        additions /= 2
    }
}
