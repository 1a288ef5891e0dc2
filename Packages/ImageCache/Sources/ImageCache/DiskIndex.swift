import Foundation
internal import Logging
internal import Plumbing
internal import Synchronization

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
    var headerChanged = false
    var markedDirty = false
    let logger: Logger
    let pid = Int64(getpid())

    init(folder: CacheFolder, fd: Int32, header: IndexHeader, logger: Logger) {
        self.folder = folder
        self.fd = fd
        self.header = header
        self.logger = logger
    }

    var path: String { folder.path + "/" + CacheFolder.indexName }
    var mask: Int { Int(header.capacity) - 1 }

    static func slotOffset(_ position: Int) -> Int {
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
            do {
                try session.recoverIfNeeded()
            } catch {
                // The caller still holds (and closes) a descriptor it passed in.
                if existing < 0 { close(fd) }
                throw error
            }
            return session
        }
    }

    /// Recounts the totals from the slots after a writer died mid-update, and also forgets
    /// every reservation and temporary file after a reboot (their writers are gone).
    mutating func recoverIfNeeded() throws(ImageCacheError) {
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

    static func capacity(for count: Int) -> UInt64 {
        var capacity: UInt64 = 1024
        while UInt64(count + 1) * 2 > capacity { capacity <<= 1 }
        return capacity
    }

    /// Writes a complete index with `slots` to a temporary file, flushes it and renames it
    /// over the index; returns its descriptor. Processes holding the old file notice the new
    /// inode when they next take the lock.
    static func write(slots: [IndexSlot], header: IndexHeader, folder: CacheFolder)
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
        let fd = POSIX.openAt(
            folder.fd,
            temporary,
            O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW
        )
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

    func readSlots(from position: Int, count: Int) throws(ImageCacheError) -> [IndexSlot] {
        var bytes = [UInt8](repeating: 0, count: count * IndexSlot.byteCount)
        let read = bytes.withUnsafeMutableBytes {
            POSIX.preadFully(fd, $0, offset: Self.slotOffset(position))
        }
        guard read == bytes.count else {
            throw .system("cannot read the index", path: path, errno: read < 0 ? errno : EIO)
        }
        let slots = bytes.withUnsafeBytes { raw in
            (0..<count).map { IndexSlot(raw, at: $0 * IndexSlot.byteCount) }
        }
        // The slots carry no checksum: garbage in one must never reach the accounting's
        // arithmetic (an overflow would trap). The caller rebuilds the index instead.
        if let index = slots.firstIndex(where: { !$0.isWellFormed }) {
            throw ImageCacheError(
                code: .ioFailure,
                message: "the index has a damaged slot",
                path: path,
                cause: IndexDamage("slot \(index + position) of the index is damaged")
            )
        }
        return slots
    }

    mutating func writeSlot(_ slot: IndexSlot, at position: Int) throws(ImageCacheError) {
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

    mutating func markDirty() throws(ImageCacheError) {
        guard !markedDirty else { return }
        header.dirtyPID = UInt64(bitPattern: pid)
        try writeHeader()
        markedDirty = true
        headerChanged = true
    }

    mutating func writeHeader() throws(ImageCacheError) {
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
}
