/// TinyLFU's popularity estimate: a count-min sketch of 4-bit counters behind a doorkeeper
/// Bloom filter, halved every `10 × capacity` additions so that old popularity fades (after
/// Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", and
/// Caffeine's `FrequencySketch`).
///
/// The doorkeeper absorbs the first sighting of each key, so the long tail of keys seen once
/// (scans) never reaches the counters; an estimate is the smallest of the key's four counters
/// plus one when the doorkeeper has seen it.
///
/// Both structures are blocked for the processor's cache, as in Caffeine 3: a key's four
/// counters lie in one 64-byte block of the table, and its two doorkeeper bits in one word,
/// so an update touches two cache lines instead of six.
@usableFromInline
struct FrequencySketch {
    /// 16 counters of 4 bits per word, in blocks of 8 words.
    private var table: [UInt64]
    private var blockMask: Int
    /// The doorkeeper's bits, 64 per word.
    private var doorkeeper: [UInt64]
    private var doorkeeperMask: Int
    /// Additions since the last halving.
    private var additions = 0
    private var sampleSize: Int
    private(set) var capacity: Int

    /// A sketch sized for about `capacity` distinct keys held at once.
    @usableFromInline
    init(capacity: Int) {
        let size = Self.powerOfTwo(atLeast: max(capacity, 64))
        self.capacity = size
        // One word (16 counters) per key, as Caffeine sizes it.
        table = [UInt64](repeating: 0, count: size)
        blockMask = size / 8 - 1
        // 8 doorkeeper bits per key: about 2% false positives with two probes.
        doorkeeper = [UInt64](repeating: 0, count: size / 8)
        doorkeeperMask = size / 8 - 1
        sampleSize = 10 * size
    }

    private static func powerOfTwo(atLeast value: Int) -> Int {
        var size = 1
        while size < value { size <<= 1 }
        return size
    }

    /// Grows the sketch (forgetting what it counted) when the cache holds more keys than it
    /// was sized for.
    @usableFromInline
    mutating func ensureCapacity(_ keys: Int) {
        guard keys > capacity else { return }
        self = FrequencySketch(capacity: keys * 2)
    }

    @inline(__always)
    private static func rehash(_ value: UInt64) -> UInt64 {
        var mixed = value &* 0x31_848B_AB4F_CA3B
        mixed ^= mixed &>> 29
        return mixed
    }

    /// The doorkeeper word and its two bits for a key, from hash bits that the table's block
    /// index (the low bits) does not use.
    @inline(__always)
    private func doorkeeperBits(_ hash: UInt64) -> (word: Int, bits: UInt64) {
        let word = Int(truncatingIfNeeded: hash &>> 24) & doorkeeperMask
        let bits = (1 &<< ((hash &>> 52) & 63)) | (1 &<< (hash &>> 58))
        return (word, bits)
    }

    /// The estimated number of times `hash` was added since it last faded, 0 to 16.
    @usableFromInline
    func frequency(_ hash: UInt64) -> Int {
        let block = (Int(truncatingIfNeeded: hash) & blockMask) &<< 3
        let counterHash = Self.rehash(hash)
        var minimum: UInt64 = 15
        for index in 0..<4 {
            let bits = counterHash &>> UInt64(index << 3)
            let word = block + Int(bits & 1) + (index << 1)
            let shift = ((bits &>> 1) & 15) << 2
            minimum = min(minimum, (table[word] &>> shift) & 0xF)
        }
        let (word, bits) = doorkeeperBits(hash)
        return Int(minimum) + (doorkeeper[word] & bits == bits ? 1 : 0)
    }

    /// Records one access to `hash`.
    @usableFromInline
    mutating func increment(_ hash: UInt64) {
        let (doorWord, doorBits) = doorkeeperBits(hash)
        if doorkeeper[doorWord] & doorBits != doorBits {
            doorkeeper[doorWord] |= doorBits
        } else {
            let block = (Int(truncatingIfNeeded: hash) & blockMask) &<< 3
            let counterHash = Self.rehash(hash)
            for index in 0..<4 {
                let bits = counterHash &>> UInt64(index << 3)
                let word = block + Int(bits & 1) + (index << 1)
                let shift = ((bits &>> 1) & 15) << 2
                if (table[word] &>> shift) & 0xF < 15 {
                    table[word] &+= 1 &<< shift
                }
            }
        }
        additions += 1
        if additions >= sampleSize { fade() }
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
