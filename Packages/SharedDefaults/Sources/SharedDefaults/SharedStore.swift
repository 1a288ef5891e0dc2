public import Foundation
internal import Glibc
public import Logging
internal import Plumbing
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
    let statsEveryRead: Atomic<Bool>
    /// Bumped by the watcher on every relevant notification.
    let events = Atomic<UInt64>(0)
    /// The `events` value the snapshot reflects.
    let seenEvents = Atomic<UInt64>(0)
    let observerCount = Atomic<Int>(0)
    let state = Mutex<State>(State())
    /// The suite's lock (nil until the first commit); the mutex also serializes this
    /// process's own committing threads, which `flock` on one descriptor would not.
    let commitLock = Mutex<SuiteLock?>(nil)
    let watcher = Mutex<DirectoryWatcher?>(nil)
    /// Set when the watcher saw the suite container removed or moved away.
    let containerGone = Atomic<Bool>(false)

    struct State {
        var values: [String: DefaultsValue] = [:]
        var generation: UInt64 = 0
        var identity: FileIdentity?
        var registered: [String: DefaultsValue] = [:]
        var observers: [UInt64: Observer] = [:]
        var nextObserverID: UInt64 = 0
    }

    struct Observer {
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
}
