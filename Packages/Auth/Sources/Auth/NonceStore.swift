internal import Synchronization

/// What a ``NonceStore`` did with one nonce.
public enum NonceOutcome: Sendable, Equatable {
    /// The nonce was not known for this key; it is now remembered. The request is fresh.
    case recorded
    /// The nonce was already remembered for this key: the request is a replay.
    case replay
    /// The store declined to remember the nonce because of this key's own bound (its quota
    /// is full and the request is not newer than what the store keeps for the key). Never
    /// caused by another key's entries. The client signs again with the current time.
    case refused
}

/// Where a ``SignatureVerifier`` remembers the nonces it accepted (the replay window).
///
/// The verifier consults the store only for a request whose signature, time and digest are
/// already valid, so every entry belongs to a key that signed it. Implementations:
/// ``InMemoryNonceStore`` (one process), and store-server's SQL store (SQLite, PostgreSQL),
/// which lets several server processes share one window and keeps it across restarts.
///
/// ## Contract
/// - ``record(keyID:nonce:created:expiresAt:now:)`` is one atomic operation. Of any number of
///   concurrent calls with the same `(keyID, nonce)`, from any process sharing the store,
///   at most one returns ``NonceOutcome/recorded`` while the entry is kept; every other
///   returns ``NonceOutcome/replay`` (or ``NonceOutcome/refused``). A SQL store does this
///   with one `INSERT … ON CONFLICT (key_id, nonce) DO NOTHING` on a primary key over
///   `(key_id, nonce)` (one row inserted = `recorded`, none = `replay`), never with a read
///   followed by a write.
/// - An entry is kept at least until `expiresAt` (inclusive): while `now <= expiresAt` a
///   replay of it must not be `recorded`. After that the verifier refuses the request by its
///   time alone, so the entry may be deleted (`DELETE … WHERE expires_at < now`, any time).
/// - ``NonceOutcome/refused`` is allowed only for the calling key's own bound. A store with
///   such a bound (a per-key quota) must keep refusing every request of that key signed at
///   or before the `created` of any entry it dropped early (a per-key cut-off), so a dropped
///   nonce can never be replayed; a store without a bound never answers `refused`.
/// - Errors (database unreachable) are thrown; the verifier turns them into a 503, never
///   into an acceptance.
public protocol NonceStore: Sendable {
    /// Atomically records that `keyID` used `nonce` on a request signed at `created` (Unix
    /// seconds), keeping it at least until `expiresAt` (Unix seconds, inclusive).
    /// - Parameters:
    ///   - keyID: the signing key id (not secret).
    ///   - nonce: the signature's nonce, 1 to 128 bytes.
    ///   - created: the signature time the client signed (already inside the verifier's window).
    ///   - expiresAt: `created` plus the verifier's past window: the last second at which
    ///     the verifier could still accept this signature.
    ///   - now: the verifier's time (Unix seconds), for dropping expired entries.
    func record(keyID: String, nonce: String, created: Int64, expiresAt: Int64, now: Int64)
        async throws -> NonceOutcome
}

/// The replay window in process memory, bounded per key.
///
/// Each key has its own quota of remembered nonces and its own cut-off, so a flood from one
/// key (one signed-in session) never refuses another key's request. When a key's quota is
/// full, its entry with the oldest signature time is dropped and that time becomes the key's
/// cut-off: from then on the key's requests signed at or before it are
/// ``NonceOutcome/refused`` (a dropped nonce can never be replayed), while its newer
/// requests still pass. Expired entries (past `expiresAt`) are dropped as time moves on.
///
/// Memory: about 60 bytes per remembered nonce (nonces are kept as a 128-bit keyed hash,
/// not as text), so at most `perKeyQuota × 60 B` per key (6 MB at the default 100,000).
/// A request that arrives after its key's quota is full and is older than everything kept is
/// refused without being stored.
public final class InMemoryNonceStore: NonceStore {
    /// Nonces remembered at most per key.
    public let perKeyQuota: Int
    private let state: Mutex<State>

    /// Creates a store.
    /// - Parameter perKeyQuota: nonces remembered per key (default 100,000: 333 requests a
    ///   second per session over a 300 s window).
    public init(perKeyQuota: Int = 100_000) {
        self.perKeyQuota = max(1, perKeyQuota)
        self.state = Mutex(State())
    }

    /// Records a nonce (see ``NonceStore``); never throws.
    public func record(keyID: String, nonce: String, created: Int64, expiresAt: Int64, now: Int64)
        async throws -> NonceOutcome
    {
        recordNow(keyID: keyID, nonce: nonce, created: created, expiresAt: expiresAt, now: now)
    }

    /// The synchronous body of ``record(keyID:nonce:created:expiresAt:now:)``.
    func recordNow(keyID: String, nonce: String, created: Int64, expiresAt: Int64, now: Int64)
        -> NonceOutcome
    {
        let id = NonceID(nonce)
        let quota = perKeyQuota
        return state.withLock { state in
            state.sweepIfDue(now: now)
            return state.windows[keyID, default: KeyWindow()].record(
                id,
                created: created,
                expiresAt: expiresAt,
                now: now,
                quota: quota
            )
        }
    }

    /// Nonces currently remembered, over all keys (for monitoring and tests).
    public var count: Int { state.withLock { $0.windows.values.reduce(0) { $0 + $1.seen.count } } }

    /// Keys with remembered nonces or a live cut-off.
    public var keyCount: Int { state.withLock { $0.windows.count } }

    /// The cut-off of a key: its requests signed at or before this time are refused
    /// (`nil` when the key never overflowed its quota).
    public func cutOff(keyID: String) -> Int64? {
        state.withLock { state in
            guard let floor = state.windows[keyID]?.floor, floor != .min else { return nil }
            return floor
        }
    }

    private struct State {
        var windows: [String: KeyWindow] = [:]
        var lastSweep = Int64.min

        /// Once a minute (of verifier time), drops expired entries of every key and the keys
        /// left with nothing that matters, so idle keys do not hold memory.
        mutating func sweepIfDue(now: Int64) {
            guard now >= lastSweep &+ 60 else { return }
            lastSweep = now
            for keyID in Array(windows.keys) {
                windows[keyID]!.dropExpired(now: now)
                if windows[keyID]!.isIdle(now: now) { windows[keyID] = nil }
            }
        }
    }
}

/// A nonce as a 128-bit hash keyed per process (two SipHash values with different seeds).
/// A collision can only make one key's fresh request look like a replay of that same key's
/// request (a refusal, never an acceptance); at 100,000 entries its chance is about 2⁻⁹⁵.
struct NonceID: Hashable {
    var high: UInt64
    var low: UInt64

    init(_ nonce: String) {
        var first = Hasher()
        first.combine(0x6e6f_6e63_6531 as UInt64)
        first.combine(nonce)
        var second = Hasher()
        second.combine(0x6e6f_6e63_6532 as UInt64)
        second.combine(nonce)
        high = UInt64(UInt(bitPattern: first.finalize()))
        low = UInt64(UInt(bitPattern: second.finalize()))
    }
}

/// One key's remembered nonces: a set for lookups and a min-heap by signature time for
/// eviction and expiry.
struct KeyWindow {
    struct Entry {
        var created: Int64
        var expiresAt: Int64
        var id: NonceID
    }

    var seen: Set<NonceID> = []
    var heap: [Entry] = []
    /// Requests signed at or before this time are refused (an entry that old was dropped
    /// before its expiry). `Int64.min` until the quota first overflows.
    var floor = Int64.min
    /// The latest `expiresAt` of a dropped entry: the cut-off matters until then.
    var floorExpiresAt = Int64.min

    mutating func record(_ id: NonceID, created: Int64, expiresAt: Int64, now: Int64, quota: Int)
        -> NonceOutcome
    {
        dropExpired(now: now)
        if created <= floor { return .refused }
        if seen.contains(id) { return .replay }
        if seen.count >= quota {
            // Full: drop the oldest-signed entry, unless this request is older still.
            guard let oldest = heap.first, created > oldest.created else { return .refused }
            popMin()
            seen.remove(oldest.id)
            floor = max(floor, oldest.created)
            floorExpiresAt = max(floorExpiresAt, oldest.expiresAt)
            if created <= floor { return .refused }
        }
        seen.insert(id)
        push(Entry(created: created, expiresAt: expiresAt, id: id))
        return .recorded
    }

    /// Drops entries whose `expiresAt` has passed (the heap is ordered by signature time;
    /// with the verifier's fixed window that is also expiry order).
    mutating func dropExpired(now: Int64) {
        while let first = heap.first, first.expiresAt < now {
            popMin()
            seen.remove(first.id)
        }
        if heap.isEmpty, heap.capacity > 64 { heap = [] }
    }

    /// Nothing kept and no cut-off that could still refuse a request in the window.
    func isIdle(now: Int64) -> Bool { heap.isEmpty && floorExpiresAt < now }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].created < heap[parent].created else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popMin() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        let count = heap.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            let right = left + 1
            var smallest = left
            if right < count, heap[right].created < heap[left].created { smallest = right }
            guard heap[smallest].created < heap[parent].created else { break }
            heap.swapAt(smallest, parent)
            parent = smallest
        }
    }
}
