public import Foundation
internal import Glibc
internal import Logging
internal import Plumbing
import Synchronization

extension SharedStore {
    // MARK: Writing

    /// Atomically reads the latest values, lets `body` change them, and commits the result
    /// durably (nothing is written when `body` changes nothing).
    ///
    /// Every process and thread committing to this suite is serialized, so an update is
    /// never lost. Keep `body` short: the suite's lock is held while it runs, so it must not
    /// wait on other work or call this store (that would deadlock). If `body` throws,
    /// nothing is written and its error is rethrown. Values past ``DefaultsLimits`` are
    /// refused (``SharedStoreError/Code/limitExceeded``) before anything is written.
    /// - Throws: `body`'s error, or ``SharedStoreError``.
    @discardableResult
    public func update<R: Sendable>(_ body: (inout [String: DefaultsValue]) throws -> R) throws -> R
    {
        try commitLock.withLock { lock throws -> R in
            let suiteLock: SuiteLock
            if let lock {
                suiteLock = lock
            } else {
                suiteLock = SuiteLock(
                    fd: try files.openLockFile(),
                    path: files.path(StoreFiles.lockName)
                )
                lock = suiteLock
            }
            try suiteLock.acquire(timeout: lockTimeout, announceAfter: Self.lockAnnounceAfter) {
                holder in
                logger.warning(
                    "waiting for another process to release the suite's lock",
                    metadata: [
                        "path": "\(suiteLock.path)",
                        "holder": "\(holder.map { "process \($0)" } ?? "unknown")",
                        "timeout": "\(lockTimeout.map { "\($0)" } ?? "none")",
                    ]
                )
            }
            defer { suiteLock.release() }
            let latest = try loadLatestLocked()
            var values = latest.values
            let result = try body(&values)
            if latest.mustWrite || values != latest.values {
                try checkContainerStillExists()
                let generation = max(latest.generation + 1, POSIX.nowMicroseconds())
                try files.commit(values, generation: generation)
                install(values: values, generation: generation)
            } else {
                install(values: latest.values, generation: latest.generation)
            }
            return result
        }
    }

    /// Stores a value; `nil` removes the key.
    public func set(_ value: DefaultsValue?, forKey key: String) throws(SharedStoreError) {
        try typed { values in values[key] = value }
    }

    /// Stores a `String`, `Int`, `Double`, `Bool`, `Date`, `Data`, or an array or
    /// dictionary of them.
    public func set(_ value: some DefaultsValueConvertible, forKey key: String)
        throws(SharedStoreError)
    {
        let stored = value.defaultsValue
        try typed { values in values[key] = stored }
    }

    /// Stores several values in one commit.
    public func set(values: [String: DefaultsValue]) throws(SharedStoreError) {
        try typed { stored in stored.merge(values) { _, new in new } }
    }

    /// Stores an `Encodable` value as the JSON-shaped value its encoding gives (objects
    /// become dictionaries), so `suite-defaults read` shows it readably.
    /// - Throws: ``SharedStoreError`` with code `coding` when it does not encode.
    public func set<T: Encodable>(
        encoding value: T,
        forKey key: String,
        encoder: JSONEncoder = JSONEncoder()
    ) throws(SharedStoreError) {
        let encoded: DefaultsValue
        do {
            encoded = try DefaultsValue(jsonData: try encoder.encode(value))
        } catch {
            throw SharedStoreError(
                code: .coding,
                message: "value for '\(key)' does not encode as JSON",
                cause: error
            )
        }
        try set(encoded, forKey: key)
    }

    /// Removes a key; returns the value it had, or `nil` when it had none.
    @discardableResult
    public func removeValue(forKey key: String) throws(SharedStoreError) -> DefaultsValue? {
        try typed { values in values.removeValue(forKey: key) }
    }

    /// Removes every key of the suite.
    public func removeAll() throws(SharedStoreError) {
        try typed { values in values.removeAll() }
    }

    /// Moves a value to a new key in one commit (replacing any value there).
    /// - Returns: `false` when `oldKey` has no value (nothing changes).
    @discardableResult
    public func renameValue(forKey oldKey: String, to newKey: String) throws(SharedStoreError)
        -> Bool
    {
        try typed { values in
            guard let value = values.removeValue(forKey: oldKey) else { return false }
            values[newKey] = value
            return true
        }
    }

    /// Adds `amount` to an integer atomically across processes; a missing key starts at 0.
    /// - Returns: the new value.
    /// - Throws: ``SharedStoreError`` with `typeMismatch` when the key holds a non-integer,
    ///   `overflow` when the sum does not fit.
    @discardableResult
    public func increment(_ key: String, by amount: Int = 1) throws(SharedStoreError) -> Int {
        try typed { values throws(SharedStoreError) in
            let current: Int
            switch values[key] {
            case nil: current = 0
            case .int(let value): current = value
            case .some(let other):
                throw SharedStoreError(
                    code: .typeMismatch,
                    message:
                        "cannot increment '\(key)': it holds a \(other.typeName), not an integer"
                )
            }
            let (sum, overflow) = current.addingReportingOverflow(amount)
            guard !overflow else {
                throw SharedStoreError(
                    code: .overflow,
                    message: "incrementing '\(key)' by \(amount) overflows"
                )
            }
            values[key] = .int(sum)
            return sum
        }
    }

    func typed<R: Sendable>(
        _ body: (inout [String: DefaultsValue]) throws(SharedStoreError) -> R
    ) throws(SharedStoreError) -> R {
        do {
            return try update { values in try body(&values) }
        } catch let error as SharedStoreError {
            throw error
        } catch {
            throw SharedStoreError(code: .ioFailure, message: "commit failed: \(error)")
        }
    }

    func checkContainerStillExists() throws(SharedStoreError) {
        var info = stat()
        guard fstat(files.directoryFD, &info) == 0 else {
            throw .system("cannot inspect", path: files.directoryPath)
        }
        guard info.st_nlink > 0 else {
            throw SharedStoreError(
                code: .ioFailure,
                message:
                    "the suite container \(files.directoryPath) was removed; open the store again",
                path: files.directoryPath
            )
        }
    }

    /// The latest committed values, read under the lock. A corrupt or unreadable store is
    /// moved aside and the newest good copy (the `.bak` or this process's snapshot) is
    /// returned with `mustWrite`, so the commit repairs the store.
    func loadLatestLocked() throws(SharedStoreError) -> (
        values: [String: DefaultsValue], generation: UInt64, mustWrite: Bool
    ) {
        let snapshot = state.withLock { (values: $0.values, generation: $0.generation) }
        switch try files.load(knownGeneration: snapshot.generation) {
        case .unchanged: return (snapshot.values, snapshot.generation, false)
        case .loaded(let generation, let values): return (values, generation, false)
        case .missing: return ([:], snapshot.generation, false)
        case .corrupt(let reason):
            let movedTo = files.moveAside()
            var best = (values: snapshot.values, generation: snapshot.generation, source: "memory")
            if case .loaded(let generation, let values)? = try? files.load(StoreFiles.backupName),
                generation >= best.generation
            {
                best = (values, generation, "backup")
            }
            logger.error(
                "store is corrupt or unreadable; moved aside, continuing from the last good copy",
                metadata: [
                    "path": "\(files.path(StoreFiles.storeName))",
                    "reason": "\(reason)",
                    "movedTo": "\(movedTo ?? "(could not move)")",
                    "restoredFrom": "\(best.generation == 0 ? "nothing (empty)" : best.source)",
                    "restoredGeneration": "\(best.generation)",
                ]
            )
            return (best.values, best.generation, true)
        }
    }
}
