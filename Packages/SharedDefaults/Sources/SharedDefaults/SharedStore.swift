public import Foundation
public import Plumbing
internal import Glibc
public import Logging
import Synchronization

/// A suite's shared settings: a `UserDefaults`-like store that every process of the suite
/// can read and change at once without losing an update.
///
/// ```swift
/// let store = try SharedStore(suite: "shopfloor")
/// try store.set("https://store.example", forKey: "serverURL")
/// let launches = try store.increment("launchCount")
/// for await change in store.changes(forKey: "serverURL") { print(change.newValue ?? "removed") }
/// ```
///
/// ## Consistency
/// - Every change is a commit: under an exclusive `flock` on `defaults.lock`, the latest
///   file is read, the change is applied, and a complete new file is written, flushed and
///   renamed into place. ``update(_:)`` and ``increment(_:by:)`` therefore always work on the
///   latest values, whichever process or thread wrote them, and never lose one. The lock is
///   held only while committing; the kernel drops it when a process dies.
/// - A method that changes the store returns only after the new version is durable (file
///   and directory flushed): it survives `kill -9` of the writer at any moment.
/// - Reads are served from an in-memory snapshot. A process always reads its own writes. A
///   commit by another process is seen once its inotify notification has arrived (tens of
///   microseconds typically) with ``RefreshPolicy/notifications``, or at the very next read
///   with ``RefreshPolicy/statEveryRead``.
///
/// Secrets do not belong here: Auth keeps tokens in its own `0600` file in the suite's
/// container, which this store never reads or prints.
public final class SharedStore: Sendable {
    /// How the in-memory snapshot learns of other processes' commits.
    public enum RefreshPolicy: Sendable, Hashable {
        /// A watcher thread (inotify) marks the snapshot stale; a read costs a dictionary
        /// lookup under a lock. The default.
        case notifications
        /// Every read checks the store file's identity with one `stat` (about a
        /// microsecond) and starts no thread until something observes changes. For
        /// short-lived commands.
        case statEveryRead
    }

    /// The suite (app group) name.
    public let suiteName: String
    /// The suite's container directory.
    public let containerURL: URL
    /// The store file, `defaults.store` in the container.
    public var storeURL: URL { containerURL.appendingPathComponent(StoreFiles.storeName) }

    let files: StoreFiles
    let logger: Logger
    let policy: RefreshPolicy
    /// How long a commit waits for another process's lock (nil: as long as it takes).
    let lockTimeout: Duration?
    /// When a waiting commit says on the logger that it is waiting.
    static let lockAnnounceAfter: Duration = .seconds(1)
    /// True when reads check the file with `stat` (asked for, or inotify unavailable).
    private let statsEveryRead: Atomic<Bool>
    /// Bumped by the watcher on every relevant notification.
    private let events = Atomic<UInt64>(0)
    /// The `events` value the snapshot reflects.
    private let seenEvents = Atomic<UInt64>(0)
    private let observerCount = Atomic<Int>(0)
    private let state = Mutex<State>(State())
    /// The suite's lock (nil until the first commit); the mutex also serializes this
    /// process's own committing threads, which `flock` on one descriptor would not.
    private let commitLock = Mutex<SuiteLock?>(nil)
    private let watcher = Mutex<DirectoryWatcher?>(nil)
    /// Set when the watcher saw the suite container removed or moved away.
    private let containerGone = Atomic<Bool>(false)

    private struct State {
        var values: [String: DefaultsValue] = [:]
        var generation: UInt64 = 0
        var identity: FileIdentity?
        var registered: [String: DefaultsValue] = [:]
        var observers: [UInt64: Observer] = [:]
        var nextObserverID: UInt64 = 0
    }

    private struct Observer {
        var key: String?
        var deliver: @Sendable ([DefaultsChange]) -> Void
        var finish: @Sendable () -> Void
    }

    /// Opens (creating if needed) a suite's store.
    /// - Parameters:
    ///   - suite: the suite name; by default `SHOPFLOOR_SUITE`, else `shopfloor`.
    ///   - root: the containers' root; by default from `SHOPFLOOR_HOME` / `XDG_DATA_HOME`.
    ///   - refresh: how other processes' commits reach the snapshot.
    ///   - logger: where corruption, recovery, notification problems and waits for another
    ///     process's lock (after a second) are reported.
    ///   - lockTimeout: how long a change waits while another process holds the suite's lock
    ///     before failing with ``SharedStoreError/Code/lockTimeout``; nil waits as long as it
    ///     takes.
    /// - Throws: ``SharedStoreError`` (invalid suite name, insecure container, I/O).
    public init(
        suite: String? = nil,
        root: URL? = nil,
        refresh: RefreshPolicy = .notifications,
        logger: Logger = Logger(label: "shopfloor.shared-defaults"),
        lockTimeout: Duration? = nil
    ) throws(SharedStoreError) {
        self.lockTimeout = lockTimeout
        let suiteName = suite ?? SuiteContainer.defaultSuiteName()
        self.suiteName = suiteName
        self.containerURL = try Self.containerURL(forSuite: suiteName, root: root)
        self.files = try StoreFiles(directory: containerURL)
        var logger = logger
        logger[metadataKey: "suite"] = "\(suiteName)"
        self.logger = logger
        self.policy = refresh
        self.statsEveryRead = Atomic(refresh == .statEveryRead)
        // Watch before the first load, so no commit can slip between the two unseen.
        if refresh == .notifications { startWatcher() }
        self.refresh(force: true)
    }

    deinit {
        watcher.withLock { $0 }?.stop()
        let finishers = state.withLock { state in state.observers.values.map(\.finish) }
        for finish in finishers { finish() }
    }

    /// The container directory of a suite (created `0700` and checked), for other
    /// packages' files; see ``SuiteContainer/containerURL(forSuite:root:)``.
    public static func containerURL(forSuite suite: String, root: URL? = nil)
        throws(SharedStoreError) -> URL
    {
        do {
            return try SuiteContainer.containerURL(forSuite: suite, root: root)
        } catch {
            throw SharedStoreError(error)
        }
    }

    // MARK: Reading

    /// The value for a key: the stored one, else the registered default, else `nil`.
    public func value(forKey key: String) -> DefaultsValue? {
        refreshIfNeeded()
        return state.withLock { $0.values[key] ?? $0.registered[key] }
    }

    /// The value for a key converted to `type`, or `nil` when absent or of another type.
    public func value<T: DefaultsValueConvertible>(forKey key: String, as type: T.Type) -> T? {
        value(forKey: key).flatMap(T.init(defaultsValue:))
    }

    /// The value for a key.
    public subscript(key: String) -> DefaultsValue? { value(forKey: key) }

    /// The string for a key, if it is a string.
    public func string(forKey key: String) -> String? { value(forKey: key)?.stringValue }
    /// The integer for a key (see ``DefaultsValue/intValue``).
    public func int(forKey key: String) -> Int? { value(forKey: key)?.intValue }
    /// The number for a key as a double (see ``DefaultsValue/doubleValue``).
    public func double(forKey key: String) -> Double? { value(forKey: key)?.doubleValue }
    /// The boolean for a key (see ``DefaultsValue/boolValue``).
    public func bool(forKey key: String) -> Bool? { value(forKey: key)?.boolValue }
    /// The date for a key, if it is a date.
    public func date(forKey key: String) -> Date? { value(forKey: key)?.dateValue }
    /// The bytes for a key, if they are data.
    public func data(forKey key: String) -> Data? { value(forKey: key)?.dataValue }
    /// The array for a key, if it is an array.
    public func array(forKey key: String) -> [DefaultsValue]? { value(forKey: key)?.arrayValue }
    /// The dictionary for a key, if it is a dictionary.
    public func dictionary(forKey key: String) -> [String: DefaultsValue]? {
        value(forKey: key)?.dictionaryValue
    }

    /// Decodes a `Codable` value stored with ``set(encoding:forKey:encoder:)``.
    /// - Returns: `nil` when the key is absent.
    /// - Throws: ``SharedStoreError`` with code `coding` when the stored value does not decode.
    public func decoded<T: Decodable>(
        _ type: T.Type,
        forKey key: String,
        decoder: JSONDecoder = JSONDecoder()
    ) throws(SharedStoreError) -> T? {
        guard let value = value(forKey: key) else { return nil }
        do {
            return try decoder.decode(T.self, from: Data(value.jsonText().utf8))
        } catch {
            throw SharedStoreError(
                code: .coding,
                message: "value for '\(key)' does not decode as \(T.self)",
                cause: error
            )
        }
    }

    /// Every stored value merged over the registered defaults, as `UserDefaults` gives it.
    public func dictionaryRepresentation() -> [String: DefaultsValue] {
        refreshIfNeeded()
        return state.withLock { $0.registered.merging($0.values) { _, stored in stored } }
    }

    /// Only the values stored in the suite's file (no registered defaults).
    public func storedValues() -> [String: DefaultsValue] {
        refreshIfNeeded()
        return state.withLock { $0.values }
    }

    /// The store's generation: it changes with every commit (0 for a suite never written).
    public var generation: UInt64 {
        refreshIfNeeded()
        return state.withLock { $0.generation }
    }

    /// Sets fallback values for keys that have none stored; kept in this process only.
    public func register(defaults: [String: DefaultsValue]) {
        state.withLock { $0.registered.merge(defaults) { _, new in new } }
    }

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

    private func typed<R: Sendable>(
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

    private func checkContainerStillExists() throws(SharedStoreError) {
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
    private func loadLatestLocked() throws(SharedStoreError) -> (
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

    // MARK: Snapshot refresh

    @inline(__always)
    private func refreshIfNeeded() {
        if statsEveryRead.load(ordering: .relaxed) {
            refresh(force: false)
        } else if events.load(ordering: .acquiring) != seenEvents.load(ordering: .relaxed) {
            refresh(force: false)
        }
    }

    /// Brings the snapshot up to the file; repairs a corrupt store.
    private func refresh(force: Bool) {
        let useStat = statsEveryRead.load(ordering: .relaxed)
        var corrupt = false
        state.withLock { state in
            let target = events.load(ordering: .acquiring)
            let identity = useStat || force ? files.storeIdentity() : nil
            if !force {
                if useStat {
                    guard identity != state.identity else { return }
                } else {
                    guard target != seenEvents.load(ordering: .relaxed) else { return }
                }
            }
            do {
                switch try files.load(knownGeneration: state.generation) {
                case .missing:
                    if state.generation != 0 || !state.values.isEmpty {
                        install(values: [:], generation: 0, in: &state)
                    }
                case .unchanged: break
                case .loaded(let generation, let values):
                    install(values: values, generation: generation, in: &state)
                case .corrupt: corrupt = true
                }
                state.identity = identity
            } catch {
                logger.error("cannot refresh the snapshot: \(error)")
            }
            seenEvents.store(target, ordering: .relaxed)
        }
        if corrupt {
            do {
                try update { _ in () }
            } catch {
                serveBackupWithoutRepair(because: error)
            }
        }
    }

    /// The store is damaged and cannot be repaired from here (a read-only file system, no
    /// write permission): read the backup as it is, so readers get the last good values
    /// rather than an empty suite.
    private func serveBackupWithoutRepair(because error: any Error) {
        guard case .loaded(let generation, let values)? = try? files.load(StoreFiles.backupName)
        else {
            logger.error(
                "the store is corrupt and cannot be repaired, and there is no usable backup",
                metadata: ["path": "\(files.path(StoreFiles.storeName))", "cause": "\(error)"]
            )
            return
        }
        logger.error(
            "the store is corrupt and cannot be repaired; reading its backup unchanged",
            metadata: [
                "path": "\(files.path(StoreFiles.storeName))",
                "backup": "\(files.path(StoreFiles.backupName))",
                "cause": "\(error)",
            ]
        )
        install(values: values, generation: generation)
    }

    private func install(values: [String: DefaultsValue], generation: UInt64) {
        state.withLock { install(values: values, generation: generation, in: &$0) }
    }

    /// Replaces the snapshot and tells observers what changed (in order, under the lock).
    private func install(values: [String: DefaultsValue], generation: UInt64, in state: inout State)
    {
        guard generation != state.generation || values != state.values else { return }
        if !state.observers.isEmpty {
            let changes = Self.diff(old: state.values, new: values, suite: suiteName, date: Date())
            if !changes.isEmpty {
                for observer in state.observers.values {
                    let relevant =
                        observer.key.map { key in changes.filter { $0.key == key } } ?? changes
                    if !relevant.isEmpty { observer.deliver(relevant) }
                }
            }
        }
        state.values = values
        state.generation = generation
    }

    static func diff(
        old: [String: DefaultsValue],
        new: [String: DefaultsValue],
        suite: String,
        date: Date
    ) -> [DefaultsChange] {
        var changes: [DefaultsChange] = []
        for (key, value) in new where old[key] != value {
            changes.append(
                DefaultsChange(
                    suite: suite,
                    key: key,
                    oldValue: old[key],
                    newValue: value,
                    date: date
                )
            )
        }
        for (key, value) in old where new[key] == nil {
            changes.append(
                DefaultsChange(suite: suite, key: key, oldValue: value, newValue: nil, date: date)
            )
        }
        return changes.sorted { $0.key < $1.key }
    }

    // MARK: Observation

    /// Changes to one key (or, with `nil`, to every key) made by any process, as they are
    /// seen; the sequence ends when the task iterating it is cancelled or the store is
    /// released. Several commits that land within one notification may arrive as one
    /// change from the first old value to the latest new value.
    ///
    /// The sequence also ends when the suite's container is removed
    /// (``isContainerRemoved`` tells that end apart).
    public func changes(forKey key: String? = nil) -> AsyncStream<DefaultsChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: DefaultsChange.self,
            bufferingPolicy: .unbounded
        )
        let id = addObserver(
            key: key,
            deliver: { changes in for change in changes { continuation.yield(change) } },
            finish: { continuation.finish() }
        )
        continuation.onTermination = { [weak self] _ in self?.removeObserver(id) }
        if isContainerRemoved { continuation.finish() }
        return stream
    }

    /// Calls `handler` (on a private serial queue, in order) for each change to one key, or
    /// with `nil` to every key, made by any process, until the observation is cancelled or
    /// released.
    public func observe(
        key: String? = nil,
        handler: @escaping @Sendable (DefaultsChange) -> Void
    ) -> DefaultsObservation {
        let queue = DispatchQueue(label: "shopfloor.shared-defaults.observer")
        let id = addObserver(
            key: key,
            deliver: { changes in queue.async { for change in changes { handler(change) } } },
            finish: {}
        )
        return DefaultsObservation { [weak self] in self?.removeObserver(id) }
    }

    /// Whether the suite's container was removed (or moved away) while this store watched
    /// it. Change sequences end when that happens: nothing more can change in the container
    /// this store opened.
    public var isContainerRemoved: Bool { containerGone.load(ordering: .relaxed) }

    /// Whether an inotify watcher is running for this store (for tests and diagnostics).
    public var isWatching: Bool { watcher.withLock { $0 != nil } }

    var currentWatcher: DirectoryWatcher? { watcher.withLock { $0 } }

    private func addObserver(
        key: String?,
        deliver: @escaping @Sendable ([DefaultsChange]) -> Void,
        finish: @escaping @Sendable () -> Void
    ) -> UInt64 {
        startWatcher()
        // Start from the latest values, so only later changes are reported.
        refresh(force: true)
        let id = state.withLock { state in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.observers[id] = Observer(key: key, deliver: deliver, finish: finish)
            return id
        }
        observerCount.add(1, ordering: .relaxed)
        return id
    }

    private func removeObserver(_ id: UInt64) {
        let removed = state.withLock { $0.observers.removeValue(forKey: id) != nil }
        guard removed else { return }
        let remaining = observerCount.subtract(1, ordering: .relaxed).newValue
        // With stat refresh the watcher exists only for observers: stop it with the last.
        if remaining == 0 && policy == .statEveryRead {
            let stopped = watcher.withLock { watcher in
                defer { watcher = nil }
                return watcher
            }
            stopped?.stop()
        }
    }

    private func startWatcher() {
        watcher.withLock { watcher in
            guard watcher == nil else { return }
            do {
                watcher = try DirectoryWatcher(
                    directory: files.directoryPath,
                    names: [StoreFiles.storeName]
                ) { [weak self] directoryGone in
                    self?.storeChanged(directoryGone: directoryGone)
                }
            } catch {
                logger.warning(
                    "change notifications unavailable; reads will check the file: \(error)"
                )
                statsEveryRead.store(true, ordering: .relaxed)
            }
        }
    }

    /// Called on the watcher thread.
    private func storeChanged(directoryGone: Bool) {
        var info = stat()
        let directoryGone =
            directoryGone || (fstat(files.directoryFD, &info) == 0 && info.st_nlink == 0)
        events.add(1, ordering: .releasing)
        if directoryGone {
            logger.warning("the suite container was removed; reads will check the file")
            statsEveryRead.store(true, ordering: .relaxed)
        }
        if observerCount.load(ordering: .relaxed) > 0 {
            refresh(force: false)
        }
        if directoryGone && !containerGone.exchange(true, ordering: .relaxed) {
            // Nothing will ever change in the removed directory: end every change sequence
            // rather than leave its reader waiting in silence.
            let finishers = state.withLock { state in state.observers.values.map(\.finish) }
            for finish in finishers { finish() }
        }
    }
}
