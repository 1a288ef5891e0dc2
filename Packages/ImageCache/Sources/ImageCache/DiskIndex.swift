internal import Plumbing
import Foundation
internal import Logging
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
struct IndexDamage: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

/// The cache folder as the index sees it: a directory descriptor and the names in it.
struct CacheFolder: Sendable {
    static let indexName = "index"
    static let indexTempName = "index.new"
    static let lockName = "lock"
    static let temporaryFolder = "tmp"

    let fd: Int32
    let path: String
    let durable: Bool

    func temporaryName(_ id: UInt64) -> String { Self.temporaryFolder + "/" + hexID(id) }

    /// The entry folders' names, `00` to `ff`.
    static let entryFolders: [String] = (0..<256).map { value in
        let digits = Array("0123456789abcdef")
        return String([digits[value >> 4], digits[value & 15]])
    }

    /// The names in a folder of the cache (empty when it does not exist).
    func names(in folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path + "/" + folder)) ?? []
    }
}

/// Reservation ids this process holds now; another instance in the same process that finds
/// one of its pid's reservations missing from here knows it is left over from a crash (the
/// pid was reused).
let liveReservations = LiveReservations()

final class LiveReservations: Sendable {
    private let ids = Mutex<Set<UInt64>>([])
    func insert(_ id: UInt64) { _ = ids.withLock { $0.insert(id) } }
    func remove(_ id: UInt64) { _ = ids.withLock { $0.remove(id) } }
    func contains(_ id: UInt64) -> Bool { ids.withLock { $0.contains(id) } }
}

/// The index file while this process holds the cache's lock: every read and write of the
/// shared accounting happens through it.
///
/// Crash safety, in the order of operations: an entry's slot is written (and, durably,
/// flushed) before its file is renamed into place, and a victim's file is removed (and its
/// folder flushed) before its slot is cleared; so the index always counts at least the bytes
/// in the folder. Multi-slot updates mark the header with the writer's pid first; whoever
/// takes the lock and finds a mark (its writer died mid-update) or another boot id recounts.
struct IndexSession {
    let folder: CacheFolder
    var fd: Int32
    var header: IndexHeader
    private var headerChanged = false
    private var markedDirty = false
    let logger: Logger
    let pid = Int64(getpid())

    init(folder: CacheFolder, fd: Int32, header: IndexHeader, logger: Logger) {
        self.folder = folder
        self.fd = fd
        self.header = header
        self.logger = logger
    }

    var path: String { folder.path + "/" + CacheFolder.indexName }
    private var mask: Int { Int(header.capacity) - 1 }

    private static func slotOffset(_ position: Int) -> Int {
        IndexHeader.pageSize + position * IndexSlot.byteCount
    }

    // MARK: Opening

    /// Opens the index, creating it for a new folder and rebuilding it from the folder when
    /// it is missing or damaged, then recovers from a crashed writer or a reboot.
    static func open(
        folder: CacheFolder,
        fd existing: Int32,
        logger: Logger
    ) throws(ImageCacheError) -> IndexSession {
        var fd = existing
        if fd < 0 {
            fd = POSIX.openAt(folder.fd, CacheFolder.indexName, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            if fd < 0 {
                guard errno == ENOENT else {
                    throw .system("cannot open the index", path: folder.path + "/index")
                }
                let session = try rebuild(folder: folder, reason: nil, logger: logger)
                return session
            }
        }
        var page = [UInt8](repeating: 0, count: IndexHeader.pageSize)
        let count = page.withUnsafeMutableBytes { POSIX.preadFully(fd, $0, offset: 0) }
        guard count >= 0 else {
            let code = errno
            close(fd)
            throw .system("cannot read the index", path: folder.path + "/index", errno: code)
        }
        let decoded: Result<IndexHeader, IndexDamage> =
            count < IndexHeader.pageSize
            ? .failure(IndexDamage("the index file is cut short")) : IndexHeader.decode(page)
        switch decoded {
        case .failure(let damage):
            close(fd)
            return try rebuild(folder: folder, reason: damage.reason, logger: logger)
        case .success(let header):
            var info = stat()
            let expected = Self.slotOffset(Int(header.capacity))
            if fstat(fd, &info) != 0 || Int(info.st_size) < expected {
                close(fd)
                return try rebuild(
                    folder: folder,
                    reason: "the index file is cut short",
                    logger: logger
                )
            }
            var session = IndexSession(folder: folder, fd: fd, header: header, logger: logger)
            try session.recoverIfNeeded()
            return session
        }
    }

    /// Recounts the totals from the slots after a writer died mid-update, and also forgets
    /// every reservation and temporary file after a reboot (their writers are gone).
    private mutating func recoverIfNeeded() throws(ImageCacheError) {
        let rebooted = (header.bootHigh, header.bootLow) != currentBootID
        guard header.dirtyPID != 0 || rebooted else { return }
        logger.notice(
            "recounting the image cache index",
            metadata: [
                "path": "\(folder.path)",
                "reason":
                    "\(rebooted ? "first use since a reboot" : "a writer stopped mid-update")",
            ]
        )
        let slots = try readSlots(from: 0, count: Int(header.capacity))
        var count: UInt64 = 0
        var tombstones: UInt64 = 0
        var bytes: UInt64 = 0
        for slot in slots {
            if slot.isOccupied {
                count += 1
                bytes += slot.size
            } else if slot.isTombstone {
                tombstones += 1
            }
        }
        header.count = count
        header.tombstones = tombstones
        header.committedBytes = bytes
        if rebooted {
            header.reservations = [Reservation](
                repeating: .free,
                count: IndexHeader.reservationCount
            )
            (header.bootHigh, header.bootLow) = currentBootID
            sweepTemporaries()
        }
        header.reservedBytes = header.reservations.reduce(0) { $0 + $1.bytes }
        header.dirtyPID = 0
        headerChanged = true
    }

    /// Builds a new index from the entry files in the folder: only for a new folder, a lost
    /// index or a damaged one, never on a normal open.
    static func rebuild(folder: CacheFolder, reason: String?, logger: Logger)
        throws(ImageCacheError)
        -> IndexSession
    {
        if let reason {
            logger.warning(
                "rebuilding the image cache index from its folder",
                metadata: ["path": "\(folder.path)", "reason": "\(reason)"]
            )
        }
        var slots: [IndexSlot] = []
        for name in CacheFolder.entryFolders {
            for file in folder.names(in: name) {
                let relative = name + "/" + file
                guard let (high, low) = parseHexName(file), hexName(high, low).hasPrefix(name)
                else {
                    // Not an entry (a stray temporary or a foreign file): it would be counted
                    // by nobody.
                    unlinkat(folder.fd, relative, 0)
                    continue
                }
                var info = stat()
                guard fstatat(folder.fd, relative, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                    continue
                }
                guard info.st_mode & S_IFMT == S_IFREG else {
                    unlinkat(folder.fd, relative, 0)
                    continue
                }
                let accessed =
                    UInt64(max(0, info.st_mtim.tv_sec)) * 1_000_000
                    + UInt64(max(0, info.st_mtim.tv_nsec / 1000))
                slots.append(
                    IndexSlot(high: high, low: low, size: UInt64(info.st_size), accessed: accessed)
                )
            }
        }
        var header = IndexHeader(capacity: Self.capacity(for: slots.count))
        header.count = UInt64(slots.count)
        header.committedBytes = slots.reduce(0) { $0 + $1.size }
        let fd = try write(slots: slots, header: header, folder: folder)
        var session = IndexSession(folder: folder, fd: fd, header: header, logger: logger)
        session.sweepTemporaries()
        return session
    }

    private static func capacity(for count: Int) -> UInt64 {
        var capacity: UInt64 = 1024
        while UInt64(count + 1) * 2 > capacity { capacity <<= 1 }
        return capacity
    }

    /// Writes a complete index with `slots` to a temporary file, flushes it and renames it
    /// over the index; returns its descriptor. Processes holding the old file notice the new
    /// inode when they next take the lock.
    private static func write(slots: [IndexSlot], header: IndexHeader, folder: CacheFolder)
        throws(ImageCacheError) -> Int32
    {
        let capacity = Int(header.capacity)
        let mask = capacity - 1
        var table = [UInt8](
            repeating: 0,
            count: IndexHeader.pageSize + capacity * IndexSlot.byteCount
        )
        var header = header
        header.tombstones = 0
        table.withUnsafeMutableBytes { raw in
            var occupied = [Bool](repeating: false, count: capacity)
            for slot in slots {
                var position = Int(truncatingIfNeeded: slot.high) & mask
                while occupied[position] { position = (position + 1) & mask }
                occupied[position] = true
                slot.write(raw, at: slotOffset(position))
            }
            let page = header.encode()
            page.withUnsafeBytes {
                raw.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
        }
        let temporary = CacheFolder.indexTempName
        let fd = POSIX.openAt(folder.fd, temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .system("cannot create", path: folder.path + "/" + temporary) }
        let written = table.withUnsafeBytes { POSIX.pwriteFully(fd, $0, offset: 0) }
        guard written, !folder.durable || fdatasync(fd) == 0 else {
            let code = errno
            close(fd)
            unlinkat(folder.fd, temporary, 0)
            throw .system("cannot write", path: folder.path + "/" + temporary, errno: code)
        }
        guard renameat(folder.fd, temporary, folder.fd, CacheFolder.indexName) == 0 else {
            let code = errno
            close(fd)
            throw .system(
                "cannot rename the new index over",
                path: folder.path + "/index",
                errno: code
            )
        }
        if folder.durable { fsync(folder.fd) }
        return fd
    }

    // MARK: Slots

    private func readSlots(from position: Int, count: Int) throws(ImageCacheError) -> [IndexSlot] {
        var bytes = [UInt8](repeating: 0, count: count * IndexSlot.byteCount)
        let read = bytes.withUnsafeMutableBytes {
            POSIX.preadFully(fd, $0, offset: Self.slotOffset(position))
        }
        guard read == bytes.count else {
            throw .system("cannot read the index", path: path, errno: read < 0 ? errno : EIO)
        }
        return bytes.withUnsafeBytes { raw in
            (0..<count).map { IndexSlot(raw, at: $0 * IndexSlot.byteCount) }
        }
    }

    private mutating func writeSlot(_ slot: IndexSlot, at position: Int) throws(ImageCacheError) {
        var bytes = [UInt8](repeating: 0, count: IndexSlot.byteCount)
        bytes.withUnsafeMutableBytes { slot.write($0, at: 0) }
        let written = bytes.withUnsafeBytes {
            POSIX.pwriteFully(fd, $0, offset: Self.slotOffset(position))
        }
        guard written else { throw .system("cannot write the index", path: path) }
    }

    /// Where the key's slot is, and where a new slot for it would go.
    func find(_ high: UInt64, _ low: UInt64) throws(ImageCacheError) -> (
        found: (Int, IndexSlot)?, free: Int?
    ) {
        var position = Int(truncatingIfNeeded: high) & mask
        var firstFree: Int?
        var examined = 0
        let capacity = Int(header.capacity)
        while examined < capacity {
            let block = min(16, capacity - position)
            let slots = try readSlots(from: position, count: block)
            for (offset, slot) in slots.enumerated() {
                if slot.isOccupied {
                    if slot.high == high && slot.low == low {
                        return ((position + offset, slot), firstFree)
                    }
                } else if slot.isTombstone {
                    if firstFree == nil { firstFree = position + offset }
                } else {
                    return (nil, firstFree ?? position + offset)
                }
            }
            examined += block
            position = (position + block) & mask
        }
        return (nil, firstFree)
    }

    private mutating func markDirty() throws(ImageCacheError) {
        guard !markedDirty else { return }
        header.dirtyPID = UInt64(bitPattern: pid)
        try writeHeader()
        markedDirty = true
        headerChanged = true
    }

    private mutating func writeHeader() throws(ImageCacheError) {
        let page = header.encode()
        let written = page.withUnsafeBytes {
            POSIX.pwriteFully(
                fd,
                UnsafeRawBufferPointer(rebasing: $0[0..<(IndexHeader.checksumOffset + 8)]),
                offset: 0
            )
        }
        guard written else { throw .system("cannot write the index", path: path) }
    }

    /// Writes the header back (clearing the mid-update mark) if anything changed.
    mutating func finish() throws(ImageCacheError) {
        guard headerChanged else { return }
        header.dirtyPID = 0
        header.generation &+= 1
        try writeHeader()
        headerChanged = false
        markedDirty = false
    }

    /// Flushes the index (before an entry's rename, so the slot is never younger than the
    /// file on disk).
    func sync() throws(ImageCacheError) {
        guard folder.durable else { return }
        guard fdatasync(fd) == 0 else { throw .system("cannot flush the index", path: path) }
    }

    // MARK: Entries

    /// Adds a slot for a key known to be absent; grows the table first when it is 70% used.
    mutating func insert(_ high: UInt64, _ low: UInt64, size: UInt64, accessed: UInt64)
        throws(ImageCacheError)
    {
        if (header.count + header.tombstones + 1) * 10 > header.capacity * 7 {
            try rewrite(capacity: Self.capacity(for: Int(header.count) + 1))
        }
        let (found, free) = try find(high, low)
        precondition(found == nil, "insert of a key already in the index")
        guard let position = free else {
            throw ImageCacheError(code: .ioFailure, message: "the index is full", path: path)
        }
        try markDirty()
        let previous = try readSlots(from: position, count: 1)[0]
        if previous.isTombstone { header.tombstones -= 1 }
        try writeSlot(IndexSlot(high: high, low: low, size: size, accessed: accessed), at: position)
        header.count += 1
        header.committedBytes += size
    }

    /// Changes a slot's accounted size.
    mutating func resize(at position: Int, slot: IndexSlot, to size: UInt64, accessed: UInt64)
        throws(ImageCacheError)
    {
        try markDirty()
        var updated = slot
        updated.size = size
        updated.accessed = max(slot.accessed, accessed)
        try writeSlot(updated, at: position)
        header.committedBytes = header.committedBytes - min(slot.size, header.committedBytes) + size
    }

    /// Clears a slot whose file is already gone.
    mutating func clear(at position: Int, slot: IndexSlot) throws(ImageCacheError) {
        try markDirty()
        try writeSlot(.tombstone, at: position)
        header.count -= min(1, header.count)
        header.tombstones += 1
        header.committedBytes -= min(slot.size, header.committedBytes)
    }

    /// Removes a key's file and slot; true when it was there.
    @discardableResult
    mutating func remove(_ high: UInt64, _ low: UInt64) throws(ImageCacheError) -> Bool {
        guard let (position, slot) = try find(high, low).found else {
            unlinkat(folder.fd, entryPath(high, low), 0)
            return false
        }
        try evict([(position, slot)])
        return true
    }

    /// Removes victims' files, flushes their folders, then clears their slots.
    private mutating func evict(_ victims: [(Int, IndexSlot)]) throws(ImageCacheError) {
        var folders = Set<String>()
        var gone: [(Int, IndexSlot)] = []
        for (position, slot) in victims {
            let relative = entryPath(slot.high, slot.low)
            if unlinkat(folder.fd, relative, 0) == 0 || errno == ENOENT {
                folders.insert(String(relative.prefix(2)))
                gone.append((position, slot))
            } else {
                logger.warning(
                    "cannot remove an image cache entry",
                    metadata: ["path": "\(folder.path)/\(relative)", "errno": "\(errno)"]
                )
            }
        }
        if folder.durable {
            for name in folders { POSIX.syncFolder(folder.fd, name) }
        }
        for (position, slot) in gone { try clear(at: position, slot: slot) }
    }

    /// Evicts least recently used entries until `bytes` more fit under `limit` next to the
    /// committed and reserved bytes; false when they cannot (other writers' reservations
    /// hold the space).
    mutating func makeRoom(for bytes: UInt64, limit: UInt64) throws(ImageCacheError) -> Bool {
        var rounds = 0
        while header.committedBytes + header.reservedBytes + bytes > limit {
            guard header.count > 0 else { return false }
            rounds += 1
            let candidates = try oldestSlots(fullScan: rounds > 8)
            if candidates.isEmpty {
                if rounds > 8 { return false }
                continue
            }
            var victims: [(Int, IndexSlot)] = []
            var freed: UInt64 = 0
            for candidate in candidates {
                if header.committedBytes - min(freed, header.committedBytes) + header.reservedBytes
                    + bytes <= limit
                {
                    break
                }
                victims.append(candidate)
                freed += candidate.1.size
            }
            logger.debug(
                "evicting image cache entries",
                metadata: ["count": "\(victims.count)", "bytes": "\(freed)"]
            )
            try evict(victims)
        }
        return true
    }

    /// Occupied slots, least recently used first: all of a small table, or a random run of
    /// 1,024 slots of a large one (sampled LRU, as Redis does).
    private func oldestSlots(fullScan: Bool) throws(ImageCacheError) -> [(Int, IndexSlot)] {
        let capacity = Int(header.capacity)
        var start = 0
        var count = capacity
        if capacity > 8192 && !fullScan {
            start = Int.random(in: 0..<capacity)
            count = 1024
        }
        var result: [(Int, IndexSlot)] = []
        var position = start
        var remaining = count
        while remaining > 0 {
            let block = min(remaining, capacity - position, 4096)
            let slots = try readSlots(from: position, count: block)
            for (offset, slot) in slots.enumerated() where slot.isOccupied {
                result.append((position + offset, slot))
            }
            remaining -= block
            position = (position + block) & mask
        }
        result.sort { $0.1.accessed < $1.1.accessed }
        return result
    }

    /// Rewrites the table with a new capacity, dropping tombstones.
    private mutating func rewrite(capacity: UInt64) throws(ImageCacheError) {
        let slots = try readSlots(from: 0, count: Int(header.capacity)).filter(\.isOccupied)
        var newHeader = header
        newHeader.capacity = capacity
        newHeader.count = UInt64(slots.count)
        newHeader.committedBytes = slots.reduce(0) { $0 + $1.size }
        newHeader.dirtyPID = 0
        let newFD = try Self.write(slots: slots, header: newHeader, folder: folder)
        close(fd)
        fd = newFD
        header = newHeader
        header.tombstones = 0
        markedDirty = false
        headerChanged = true
    }

    /// Records later last-use times (batched from reads); no totals change.
    mutating func applyAccessTimes(_ times: [CacheKeyHash: UInt64]) throws(ImageCacheError) {
        for (hash, time) in times {
            guard let (position, slot) = try find(hash.high, hash.low).found, slot.accessed < time
            else { continue }
            var updated = slot
            updated.accessed = time
            try writeSlot(updated, at: position)
        }
    }

    /// Empties the index (the caller removes the files), keeping in-flight reservations.
    mutating func reset() throws(ImageCacheError) {
        var newHeader = IndexHeader(capacity: 1024)
        newHeader.reservations = header.reservations
        newHeader.reservedBytes = header.reservedBytes
        let newFD = try Self.write(slots: [], header: newHeader, folder: folder)
        close(fd)
        fd = newFD
        header = newHeader
        markedDirty = false
        headerChanged = true
    }

    // MARK: Reservations

    /// Frees reservations whose writer is gone (its process ended, or it is older than an
    /// hour) and removes their temporary files.
    mutating func reclaimStaleReservations() throws(ImageCacheError) {
        let now = POSIX.nowMicroseconds()
        for index in header.reservations.indices {
            let reservation = header.reservations[index]
            guard reservation.pid != 0 else { continue }
            let stale: Bool
            if reservation.pid == pid {
                stale = !liveReservations.contains(reservation.id)
            } else {
                stale = (kill(pid_t(reservation.pid), 0) != 0 && errno == ESRCH)
            }
            guard stale || now &- reservation.startedAt > 3_600_000_000 else { continue }
            logger.notice(
                "reclaiming the space of an unfinished image cache write",
                metadata: ["pid": "\(reservation.pid)", "bytes": "\(reservation.bytes)"]
            )
            unlinkat(folder.fd, folder.temporaryName(reservation.id), 0)
            header.reservations[index] = .free
            header.reservedBytes -= min(reservation.bytes, header.reservedBytes)
            headerChanged = true
        }
    }

    /// Records a reservation; false when all reservation records are in use.
    mutating func reserve(id: UInt64, bytes: UInt64) -> Bool {
        guard let index = header.reservations.firstIndex(where: { $0.pid == 0 }) else {
            return false
        }
        header.reservations[index] = Reservation(
            id: id,
            pid: pid,
            bytes: bytes,
            startedAt: POSIX.nowMicroseconds()
        )
        header.reservedBytes += bytes
        headerChanged = true
        return true
    }

    /// Removes and returns this writer's reservation; nil when it was reclaimed.
    mutating func takeReservation(id: UInt64) -> Reservation? {
        guard let index = header.reservations.firstIndex(where: { $0.id == id && $0.pid == pid })
        else { return nil }
        let reservation = header.reservations[index]
        header.reservations[index] = .free
        header.reservedBytes -= min(reservation.bytes, header.reservedBytes)
        headerChanged = true
        return reservation
    }

    /// Removes temporary files that belong to no reservation.
    mutating func sweepTemporaries() {
        let reserved = Set(header.reservations.filter { $0.pid != 0 }.map { hexID($0.id) })
        for name in folder.names(in: CacheFolder.temporaryFolder) where !reserved.contains(name) {
            unlinkat(folder.fd, CacheFolder.temporaryFolder + "/" + name, 0)
        }
    }
}

/// A key's 128-bit hash, for batching last-use times.
struct CacheKeyHash: Hashable {
    var high: UInt64
    var low: UInt64
}
