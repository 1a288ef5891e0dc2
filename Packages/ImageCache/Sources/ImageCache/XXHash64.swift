/// XXH64 (Yann Collet's xxHash, 64-bit variant): the checksum of disk entries and the stable
/// hash behind cache keys and file names.
///
/// Swift's `Hasher` is seeded per process, so it cannot name files that several processes
/// share; CRC-32 in plain Swift runs near 1 byte per cycle, too slow to check a 48 KB entry on
/// every disk hit. XXH64 reads 32 bytes per round and is the same in every process.
enum XXHash64 {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    @inline(__always)
    private static func rotl(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value &<< count) | (value &>> (64 &- count))
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ input: UInt64) -> UInt64 {
        rotl(accumulator &+ input &* prime2, 31) &* prime1
    }

    @inline(__always)
    private static func merge(_ accumulator: UInt64, _ value: UInt64) -> UInt64 {
        (accumulator ^ round(0, value)) &* prime1 &+ prime4
    }

    /// The hash of `buffer` with `seed`.
    static func hash(_ buffer: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        guard let base = buffer.baseAddress else { return finish(seed &+ prime5) }
        let length = buffer.count
        var offset = 0
        var hash: UInt64
        if length >= 32 {
            var v1 = seed &+ prime1 &+ prime2
            var v2 = seed &+ prime2
            var v3 = seed
            var v4 = seed &- prime1
            let limit = length - 32
            while offset <= limit {
                v1 = round(
                    v1,
                    UInt64(
                        littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    )
                )
                v2 = round(
                    v2,
                    UInt64(
                        littleEndian: base.loadUnaligned(
                            fromByteOffset: offset + 8,
                            as: UInt64.self
                        )
                    )
                )
                v3 = round(
                    v3,
                    UInt64(
                        littleEndian: base.loadUnaligned(
                            fromByteOffset: offset + 16,
                            as: UInt64.self
                        )
                    )
                )
                v4 = round(
                    v4,
                    UInt64(
                        littleEndian: base.loadUnaligned(
                            fromByteOffset: offset + 24,
                            as: UInt64.self
                        )
                    )
                )
                offset += 32
            }
            hash = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            hash = merge(hash, v1)
            hash = merge(hash, v2)
            hash = merge(hash, v3)
            hash = merge(hash, v4)
        } else {
            hash = seed &+ prime5
        }
        hash = hash &+ UInt64(length)
        while offset + 8 <= length {
            let lane = UInt64(
                littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            )
            hash = rotl(hash ^ round(0, lane), 27) &* prime1 &+ prime4
            offset += 8
        }
        if offset + 4 <= length {
            let lane = UInt64(
                UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            )
            hash = rotl(hash ^ (lane &* prime1), 23) &* prime2 &+ prime3
            offset += 4
        }
        while offset < length {
            let byte = UInt64(base.load(fromByteOffset: offset, as: UInt8.self))
            hash = rotl(hash ^ (byte &* prime5), 11) &* prime1
            offset += 1
        }
        return finish(hash)
    }

    @inline(__always)
    private static func finish(_ value: UInt64) -> UInt64 {
        var hash = value
        hash ^= hash &>> 33
        hash = hash &* prime2
        hash ^= hash &>> 29
        hash = hash &* prime3
        hash ^= hash &>> 32
        return hash
    }

    /// The hash of a byte collection with `seed`.
    static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes, seed: UInt64 = 0) -> UInt64 {
        if let result = bytes.withContiguousStorageIfAvailable({
            hash(UnsafeRawBufferPointer($0), seed: seed)
        }) {
            return result
        }
        let array = Array(bytes)
        return array.withUnsafeBytes { hash($0, seed: seed) }
    }
}
