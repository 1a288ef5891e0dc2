import Foundation
internal import Logging
internal import Plumbing
internal import Synchronization

/// One entry's line in the index: its key hash, its file's size and when it was last used.
struct IndexSlot: Equatable {
    var high: UInt64
    var low: UInt64
    var size: UInt64
    var accessed: UInt64

    static let byteCount = 32
    static let empty = IndexSlot(high: 0, low: 0, size: 0, accessed: 0)
    static let tombstone = IndexSlot(high: 0, low: 0, size: .max, accessed: 0)

    var isOccupied: Bool { high != 0 || low != 0 }
    var isTombstone: Bool { !isOccupied && size == .max }
    var isEmpty: Bool { !isOccupied && size != .max }

    /// The largest entry a slot may account for (1 TiB): sums over a whole table of them
    /// cannot overflow.
    static let maximumSize: UInt64 = 1 << 40

    /// An occupied slot with a plausible size, an empty slot (all zero) or a tombstone:
    /// anything else is damage.
    var isWellFormed: Bool {
        if isOccupied { return size <= Self.maximumSize }
        return accessed == 0 && (size == 0 || size == .max)
    }

    init(high: UInt64, low: UInt64, size: UInt64, accessed: UInt64) {
        self.high = high
        self.low = low
        self.size = size
        self.accessed = accessed
    }

    init(_ raw: UnsafeRawBufferPointer, at offset: Int) {
        high = raw.load64(at: offset)
        low = raw.load64(at: offset + 8)
        size = raw.load64(at: offset + 16)
        accessed = raw.load64(at: offset + 24)
    }

    func write(_ raw: UnsafeMutableRawBufferPointer, at offset: Int) {
        raw.store64(high, at: offset)
        raw.store64(low, at: offset + 8)
        raw.store64(size, at: offset + 16)
        raw.store64(accessed, at: offset + 24)
    }
}

/// Space promised to a writer while it writes its temporary file outside the lock.
struct Reservation: Equatable {
    var id: UInt64
    var pid: Int64
    var bytes: UInt64
    var startedAt: UInt64

    static let free = Reservation(id: 0, pid: 0, bytes: 0, startedAt: 0)
}

/// The index file's first page.
///
/// ```
/// 0   "SFIMGIX1"         8  version (u32)     12 header bytes (u32, 4096)
/// 16  slot capacity      24 entries          32 tombstones
/// 40  committed bytes    48 reserved bytes   56 pid mid-update (0: clean)
/// 64  boot id (2 × u64)  80 generation
/// 128 64 reservations of 32 bytes (id, pid, bytes, started µs)
/// 2176 XXH64 of bytes 0..<2176
/// 4096 slots of 32 bytes (high, low, size, last use µs), open addressing, linear probing
/// ```
struct IndexHeader: Equatable {
    static let magic: UInt64 = 0x3158_4947_4D49_4653  // "SFIMGIX1" little-endian
    static let version: UInt32 = 1
    static let pageSize = 4096
    static let reservationCount = 64
    static let checksumOffset = 128 + 64 * 32

    var capacity: UInt64
    var count: UInt64 = 0
    var tombstones: UInt64 = 0
    var committedBytes: UInt64 = 0
    var reservedBytes: UInt64 = 0
    var dirtyPID: UInt64 = 0
    var bootHigh: UInt64 = 0
    var bootLow: UInt64 = 0
    var generation: UInt64 = 0
    var reservations = [Reservation](repeating: .free, count: IndexHeader.reservationCount)

    init(capacity: UInt64) {
        self.capacity = capacity
        (bootHigh, bootLow) = currentBootID
    }

    func encode() -> [UInt8] {
        var page = [UInt8](repeating: 0, count: Self.pageSize)
        page.withUnsafeMutableBytes { raw in
            raw.store64(Self.magic, at: 0)
            raw.store32(Self.version, at: 8)
            raw.store32(UInt32(Self.pageSize), at: 12)
            raw.store64(capacity, at: 16)
            raw.store64(count, at: 24)
            raw.store64(tombstones, at: 32)
            raw.store64(committedBytes, at: 40)
            raw.store64(reservedBytes, at: 48)
            raw.store64(dirtyPID, at: 56)
            raw.store64(bootHigh, at: 64)
            raw.store64(bootLow, at: 72)
            raw.store64(generation, at: 80)
            for (index, reservation) in reservations.enumerated() {
                let offset = 128 + index * 32
                raw.store64(reservation.id, at: offset)
                raw.store64(UInt64(bitPattern: reservation.pid), at: offset + 8)
                raw.store64(reservation.bytes, at: offset + 16)
                raw.store64(reservation.startedAt, at: offset + 24)
            }
            let checksum = XXHash64.hash(
                UnsafeRawBufferPointer(rebasing: raw[0..<Self.checksumOffset])
            )
            raw.store64(checksum, at: Self.checksumOffset)
        }
        return page
    }

    /// The header in `page`, or why it cannot be used.
    static func decode(_ page: [UInt8]) -> Result<IndexHeader, IndexDamage> {
        guard page.count >= checksumOffset + 8 else {
            return .failure(.init("the index file is cut short"))
        }
        return page.withUnsafeBytes { raw in
            guard raw.load64(at: 0) == magic else {
                return .failure(.init("the index file is not an ImageCache index"))
            }
            guard raw.load32(at: 8) == version else {
                return .failure(.init("the index has format version \(raw.load32(at: 8))"))
            }
            let checksum = XXHash64.hash(UnsafeRawBufferPointer(rebasing: raw[0..<checksumOffset]))
            guard checksum == raw.load64(at: checksumOffset) else {
                return .failure(.init("the index header checksum does not match"))
            }
            let capacity = raw.load64(at: 16)
            guard capacity >= 16, capacity <= 1 << 32, capacity & (capacity - 1) == 0 else {
                return .failure(.init("the index has an impossible capacity \(capacity)"))
            }
            var header = IndexHeader(capacity: capacity)
            header.count = raw.load64(at: 24)
            header.tombstones = raw.load64(at: 32)
            header.committedBytes = raw.load64(at: 40)
            header.reservedBytes = raw.load64(at: 48)
            header.dirtyPID = raw.load64(at: 56)
            header.bootHigh = raw.load64(at: 64)
            header.bootLow = raw.load64(at: 72)
            header.generation = raw.load64(at: 80)
            for index in 0..<reservationCount {
                let offset = 128 + index * 32
                header.reservations[index] = Reservation(
                    id: raw.load64(at: offset),
                    pid: Int64(bitPattern: raw.load64(at: offset + 8)),
                    bytes: raw.load64(at: offset + 16),
                    startedAt: raw.load64(at: offset + 24)
                )
            }
            return .success(header)
        }
    }
}

/// Why the index cannot be read; the cache then rebuilds it from the folder.
struct IndexDamage: Error, Sendable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A key's 128-bit hash, for batching last-use times.
struct CacheKeyHash: Hashable {
    var high: UInt64
    var low: UInt64
}
