internal import Foundation
internal import Glibc
internal import Logging
internal import Plumbing
import Synchronization

extension SharedStore {
    // MARK: Snapshot refresh

    @inline(__always)
    func refreshIfNeeded() {
        if statsEveryRead.load(ordering: .relaxed) {
            refresh(force: false)
        } else if events.load(ordering: .acquiring) != seenEvents.load(ordering: .relaxed) {
            refresh(force: false)
        }
    }

    /// Brings the snapshot up to the file; repairs a corrupt store.
    func refresh(force: Bool) {
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
    func serveBackupWithoutRepair(because error: any Error) {
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

    func install(values: [String: DefaultsValue], generation: UInt64) {
        state.withLock { install(values: values, generation: generation, in: &$0) }
    }

    /// Replaces the snapshot and tells observers what changed (in order, under the lock).
    func install(values: [String: DefaultsValue], generation: UInt64, in state: inout State) {
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

    func addObserver(
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

    func removeObserver(_ id: UInt64) {
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

    func startWatcher() {
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
    func storeChanged(directoryGone: Bool) {
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
