import Foundation
internal import Logging
internal import Plumbing
internal import Synchronization

extension IndexSession {
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
        if previous.isTombstone { header.tombstones -= min(1, header.tombstones) }
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
    mutating func evict(_ victims: [(Int, IndexSlot)]) throws(ImageCacheError) {
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
    func oldestSlots(fullScan: Bool) throws(ImageCacheError) -> [(Int, IndexSlot)] {
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
    mutating func rewrite(capacity: UInt64) throws(ImageCacheError) {
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
