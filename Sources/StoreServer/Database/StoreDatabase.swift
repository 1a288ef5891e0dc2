public import Foundation
public import Logging
internal import NIOCore
internal import NIOPosix
internal import NIOSSL
internal import PostgresKit
internal import SQLKit
internal import SQLiteKit
internal import Synchronization

/// A SQL connection pool on SQLite or PostgreSQL with the same interface, through SQLKit.
///
/// SQLite runs in WAL mode with a busy timeout, so readers never wait for the writer and
/// another process (an admin command) can write while the server runs. Transactions use
/// `BEGIN IMMEDIATE` on SQLite (the write lock up front, no upgrade deadlocks) and take a
/// pooled connection for their whole length on both databases. On SQLite this process's
/// writers (transactions, units of work, ``write(_:)``) queue for the write lock in memory,
/// first come first served (``WriteGate``), rather than in SQLite's sleeping busy handler.
public final class StoreDatabase: Sendable {
    /// The kind of database.
    public enum Kind: String, Sendable { case sqlite, postgres }

    /// The kind.
    public let kind: Kind
    /// Where it is (printable, no password).
    public let location: DatabaseLocation
    let logger: Logger
    let poolLogger: Logger
    let pool: Pool
    private let threadPool: NIOThreadPool?
    /// SQLite connections taken from the pool and not yet given back: ``shutdown()`` waits
    /// for them before it stops the thread pool their `close` runs on.
    let sqliteInUse = InUseCount()
    /// The SQLite connections opened, and openings under way (see ``shutdown()``).
    let sqliteConnections = SQLiteConnectionTracker()
    /// Faults a test injects into every statement (nil in production).
    let faults: InjectedFaults?
    /// Connections the pool opens at most (per event loop times the event loops).
    let poolSize: Int
    /// SQLite: this process's writers take the write lock in turn (see ``WriteGate``).
    private let writeGate = WriteGate()

    // AsyncKit's pools are not marked Sendable, but are built for use from any thread: every
    // method locks or hops to the pool's event loop.
    enum Pool: @unchecked Sendable {
        case sqlite(EventLoopGroupConnectionPool<PragmaSQLiteSource>)
        case postgres(EventLoopGroupConnectionPool<PostgresConnectionSource>)
    }

    /// Opens a pool on `location`. Nothing connects until the first query.
    /// - Parameters:
    ///   - maxConnections: connections per event loop (PostgreSQL); SQLite uses 2 per loop.
    public convenience init(location: DatabaseLocation, maxConnections: Int = 4, logger: Logger)
        throws(DatabaseError)
    {
        try self.init(
            location: location,
            maxConnections: maxConnections,
            faults: nil,
            logger: logger
        )
    }

    /// Opens a pool on `location` whose statements go through `faults` (tests).
    /// - Parameter backgroundCheckpoints: SQLite: connections never checkpoint the WAL on
    ///   commit (`wal_autocheckpoint = 0`); the owner calls ``checkpoint()`` off the request
    ///   path instead (the server's ``WALCheckpointer``). A checkpoint copies pages into the
    ///   database and syncs it twice, so the commit that triggered one waited for it, and every
    ///   writer queued behind that commit: the tail of a busy server's latency.
    init(
        location: DatabaseLocation,
        maxConnections: Int,
        faults: InjectedFaults?,
        backgroundCheckpoints: Bool = false,
        logger: Logger
    ) throws(DatabaseError) {
        self.location = location
        self.logger = logger
        self.faults = faults
        // The pools log every failed connection attempt; callers report the failure themselves
        // (with the database's name), so keep the pools quiet unless debugging.
        var poolLogger = logger
        if logger.logLevel > .debug { poolLogger.logLevel = .critical }
        self.poolLogger = poolLogger
        let group = MultiThreadedEventLoopGroup.singleton
        let loops = group.makeIterator().reduce(0) { count, _ in count + 1 }
        switch location {
        case .sqlite(let path):
            kind = .sqlite
            let url = URL(fileURLWithPath: path)
            do {
                // The database holds password hashes, signing keys and customers: a directory
                // it creates is 0700 and a new file 0600 (SQLite gives its -wal and -shm files
                // the main file's mode), whatever the umask.
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(),
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            } catch {
                throw DatabaseError(
                    .invalidLocation,
                    "cannot create the directory of SQLite database '\(path)'",
                    cause: error
                )
            }
            try Self.checkPrivate(directory: url.deletingLastPathComponent().path, of: path)
            let created = open(url.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
            if created >= 0 { close(created) }
            let connectionsPerLoop = 2
            poolSize = loops * connectionsPerLoop
            // One thread per connection plus spares: a connection waiting for the write lock
            // (busy timeout) holds a thread, and the lock holder must still get one.
            let threads = NIOThreadPool(numberOfThreads: loops * connectionsPerLoop + 2)
            threads.start()
            threadPool = threads
            let source = PragmaSQLiteSource(
                autoCheckpoint: !backgroundCheckpoints,
                tracker: sqliteConnections,
                base: SQLiteConnectionSource(
                    configuration: SQLiteConfiguration(
                        storage: .file(path: url.path),
                        enableForeignKeys: true
                    ),
                    threadPool: threads
                )
            )
            pool = .sqlite(
                EventLoopGroupConnectionPool(
                    source: source,
                    maxConnectionsPerEventLoop: connectionsPerLoop,
                    requestTimeout: .seconds(10),
                    pruneInterval: nil,
                    logger: poolLogger,
                    on: group
                )
            )
        case .postgres(let text):
            kind = .postgres
            threadPool = nil
            poolSize = loops * max(1, maxConnections)
            var configuration: SQLPostgresConfiguration
            do {
                var url = text
                // Unless the URL chooses: loopback needs no TLS; any other host requires it
                // (postgres-kit's `require` verifies the certificate and the host name against
                // the system's CA store), so a man in the middle cannot strip TLS and read the
                // password, as the library's default `prefer` would let it.
                let query = URLComponents(string: text)?.queryItems ?? []
                let chosen = query.contains {
                    ["sslmode", "tlsmode", "ssl", "tls"].contains($0.name.lowercased())
                }
                if !chosen, let host = URLComponents(string: text)?.host {
                    let loopback = host == "127.0.0.1" || host == "localhost" || host == "::1"
                    let mode = loopback ? "disable" : "require"
                    url += (text.contains("?") ? "&" : "?") + "sslmode=" + mode
                }
                configuration = try SQLPostgresConfiguration(url: url)
            } catch {
                throw DatabaseError(
                    .invalidLocation,
                    "'\(location)' is not a postgres://user@host[:port]/database URL"
                )
            }
            let query = URLComponents(string: text)?.queryItems ?? []
            if let caFile = query.last(where: { $0.name.lowercased() == "sslrootcert" })?.value {
                let mode = query.last {
                    ["sslmode", "tlsmode", "ssl", "tls"].contains($0.name.lowercased())
                }?.value
                configuration.coreConfiguration.tls = try Self.verifiedTLS(
                    caFile: caFile,
                    mode: mode,
                    location: location
                )
            }
            pool = .postgres(
                EventLoopGroupConnectionPool(
                    source: PostgresConnectionSource(sqlConfiguration: configuration),
                    maxConnectionsPerEventLoop: max(1, maxConnections),
                    requestTimeout: .seconds(10),
                    pruneInterval: nil,
                    logger: poolLogger,
                    on: group
                )
            )
        }
    }

    /// A database that takes a pooled connection per statement, or, inside a unit of work
    /// (``withUnitOfWork(_:)``), the unit's connection and transaction.
    var sql: any SQLDatabase {
        if let unit = currentUnit { return unit.sql }
        let pooled: any SQLDatabase
        switch pool {
        case .sqlite(let pool):
            pooled = PooledSQLite(pool: pool, logger: poolLogger, inUse: sqliteInUse)
        case .postgres(let pool): pooled = pool.database(logger: poolLogger).sql(queryLogLevel: nil)
        }
        return faults.map { FaultySQLDatabase(base: pooled, faults: $0) } ?? pooled
    }

    /// Runs `body` in one transaction on one connection: committed when it returns, rolled
    /// back when it throws. Inside a unit of work it is a savepoint of the unit's transaction.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T)
        async throws -> T
    {
        if let unit = currentUnit { return try await unit.savepoint(body) }
        return try await write {
            try await transactionOnConnection(body)
        }
    }

    /// Runs `body`, a write outside a transaction (one statement), in this process's turn for
    /// SQLite's write lock; on PostgreSQL at once.
    func write<T>(_ body: () async throws -> T) async throws -> T {
        guard kind == .sqlite, currentUnit == nil else { return try await body() }
        return try await writeGate.run(body)
    }

    private func transactionOnConnection<T: Sendable>(
        _ body: @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        try await withConnection { sql, begin in
            try await sql.raw(SQLQueryString(begin)).run()
            do {
                let result = try await body(sql)
                try await sql.raw("COMMIT").run()
                return result
            } catch {
                try? await sql.raw("ROLLBACK").run()
                throw error
            }
        }
    }

    /// Runs `body` with one pooled connection and the statement that begins a transaction on
    /// it (`BEGIN IMMEDIATE` on SQLite: the write lock up front, no upgrade deadlocks).
    func withConnection<T>(_ body: (any SQLDatabase, String) async throws -> T) async throws -> T {
        switch pool {
        case .sqlite(let pool):
            sqliteInUse.take()
            defer { sqliteInUse.giveBack() }
            let connection = try await pool.requestConnection(logger: poolLogger).get()
            defer { pool.releaseConnection(connection, logger: poolLogger) }
            return try await body(faulty(connection.sql(queryLogLevel: nil)), "BEGIN IMMEDIATE")
        case .postgres(let pool):
            let connection = try await pool.requestConnection(logger: poolLogger).get()
            defer { pool.releaseConnection(connection, logger: poolLogger) }
            return try await body(faulty(connection.sql(queryLogLevel: nil)), "BEGIN")
        }
    }

    private func faulty(_ sql: any SQLDatabase) -> any SQLDatabase {
        faults.map { FaultySQLDatabase(base: sql, faults: $0) } ?? sql
    }

    /// What one ``checkpoint()`` did.
    struct Checkpoint: Sendable, Equatable {
        /// Frames in the WAL when the passive pass ran, and how many of them it copied.
        var frames = 0, copied = 0
        /// Whether a rewind was tried (in this process's turn for the write lock), and whether
        /// the WAL was then restarted (the next write starts it from the beginning).
        var rewindTried = false, restarted = false
    }

    /// SQLite: moves what the WAL holds into the database, on pooled connections; a no-op on
    /// PostgreSQL.
    ///
    /// First a passive checkpoint (`PRAGMA wal_checkpoint(PASSIVE)`) copies the frames and
    /// syncs the files, waiting for no one. A copied WAL is still appended to, never rewound,
    /// while any reader holds a snapshot in it, which under steady load is always: it grew by
    /// 14 MB a second at 1,000 signed requests a second. So once the WAL holds `restartFrames`
    /// frames (16 MiB of 4 KiB pages by default) and all were copied, a `RESTART` checkpoint
    /// follows in this process's turn for the write lock: it copies only what came since and
    /// waits for the readers of the old WAL to finish (2–6 ms in all, about once a second at
    /// that rate; 1 s at most, then it is put off), after which the next write starts the WAL
    /// from its beginning; `journal_size_limit` trims a larger file to 64 MiB.
    ///
    /// Readers whose snapshots overlap (one always open while writes go on) leave the frames
    /// since the oldest snapshot uncopied at every pass, so the WAL is never all copied: it
    /// grew past 70 MB in 2 s that way. Past 4 × `restartFrames` the rewind is tried anyway:
    /// writers wait while it copies what the passive pass could not.
    @discardableResult
    func checkpoint(restartFrames: Int = 4_096) async throws -> Checkpoint {
        guard kind == .sqlite else { return Checkpoint() }
        var result = Checkpoint()
        if let row = try await sql.raw("PRAGMA wal_checkpoint(PASSIVE)").first() {
            result.frames = try row.decode(column: "log", as: Int.self)
            result.copied = try row.decode(column: "checkpointed", as: Int.self)
        }
        let forcedAt = restartFrames > Int.max / 4 ? Int.max : restartFrames * 4
        guard result.frames >= restartFrames,
            result.copied == result.frames || result.frames >= forcedAt
        else { return result }
        result.rewindTried = true
        result.restarted = try await write {
            try await withConnection { sql, _ in try await Self.rewind(sql) }
        }
        return result
    }

    /// `PRAGMA wal_checkpoint(RESTART)` on `sql`, called with the write lock's turn held (no
    /// writer meanwhile), tried again every millisecond for 1 s at most
    /// (`PragmaSQLiteSource.rewindBusyTimeout`); whether the WAL was rewound.
    ///
    /// Not SQLite's busy handler: waiting inside the checkpoint, it lost to readers whose
    /// snapshots overlap (half of the rewinds under two readers holding 30 ms snapshots gave
    /// up after the whole second, holding writers back for it). Tried afresh, a pass finds
    /// the readers that began since it copied everything reading the database file, and the
    /// older ones gone; a long read (`store-server backup`, another process) still puts it off
    /// to a later round, which WALCheckpointer spaces out.
    private static func rewind(_ sql: any SQLDatabase) async throws -> Bool {
        try await sql.raw("PRAGMA busy_timeout = 0").run()
        let deadline = ContinuousClock.now + .milliseconds(PragmaSQLiteSource.rewindBusyTimeout)
        let outcome: Result<Bool, any Error>
        do {
            var rewound = false
            while true {
                let row = try await sql.raw("PRAGMA wal_checkpoint(RESTART)").first()
                rewound = try row?.decode(column: "busy", as: Int.self) == 0
                if rewound || ContinuousClock.now >= deadline { break }
                try await Task.sleep(for: .milliseconds(1))
            }
            outcome = .success(rewound)
        } catch {
            outcome = .failure(error)
        }
        try await sql.raw(
            "PRAGMA busy_timeout = \(unsafeRaw: String(PragmaSQLiteSource.busyTimeout))"
        ).run()
        return try outcome.get()
    }

    /// Checks that the database answers (`SELECT 1`).
    public func ping() async -> Bool {
        do {
            _ = try await sql.raw("SELECT 1 AS one").first()
            return true
        } catch {
            return false
        }
    }

    /// Whether the database answers a ping within `limit` (false when it does not answer in
    /// time: a blackholed host holds a connection attempt far longer).
    func isReachable(within limit: Duration = .seconds(2)) async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = FirstAnswer(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                answer.give(false)
            }
            Task {
                answer.give(await self.ping())
                timer.cancel()
            }
        }
    }

    /// Closes every connection. A SQLite connection still in use (a statement that outlived
    /// its request, a health check past its limit) or still opening is closed when it comes
    /// back, on the thread pool, which is stopped only once every connection opened is
    /// closed: closed on a stopped pool, a handle would stay open (and a debug build of
    /// SQLiteNIO traps when such a connection is freed).
    ///
    /// Returns once that is settled, or after `settleWithin` (by default SQLite's busy
    /// timeout and 5 s more: an opening may wait that long for a lock), logging what is still
    /// out; the thread pool then stops in the background when the last connection closes.
    public func shutdown(settleWithin: Duration? = nil) async {
        switch pool {
        case .sqlite(let pool):
            try? await pool.shutdownAsync()
            let limit = settleWithin ?? .milliseconds(PragmaSQLiteSource.busyTimeout) + .seconds(5)
            if await sqliteSettled(pool, within: limit) {
                try? await threadPool?.shutdownGracefully()
                return
            }
            logger.warning(
                "SQLite connections still in use or opening at shutdown; their thread pool stops when they close",
                metadata: ["in-use": "\(sqliteInUse.count)", "waited": "\(limit)"]
            )
            let threadPool = threadPool
            Task.detached { [self] in
                _ = await sqliteSettled(pool, within: nil)
                try? await threadPool?.shutdownGracefully()
            }
        case .postgres(let pool):
            try? await pool.shutdownAsync()
            try? await threadPool?.shutdownGracefully()
        }
    }

    /// Waits until no SQLite connection is in use or opening and every one opened is closed,
    /// for at most `limit` (nil: however long it takes); whether it came to that.
    private func sqliteSettled(
        _ pool: EventLoopGroupConnectionPool<PragmaSQLiteSource>,
        within limit: Duration?
    ) async -> Bool {
        let deadline = limit.map { ContinuousClock.now.advanced(by: $0) }
        while sqliteInUse.count > 0 || !sqliteConnections.settled {
            if let deadline, ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        // A release runs on its event loop, after the count: a task behind it on each loop
        // means every close is queued on the thread pool, which finishes its queue.
        for loop in pool.eventLoopGroup.makeIterator() {
            try? await loop.submit {}.get()
        }
        return true
    }
}

/// A continuation resumed by whichever answer comes first.
private final class FirstAnswer: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = Mutex(continuation)
    }

    func give(_ value: Bool) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}

extension StoreDatabase {
    /// Refuses a SQLite database whose directory group or others may enter, list or write
    /// (as the suite container is refused): its files hold password hashes, signing keys and
    /// customers, and SQLite creates its `-wal`, `-shm` and journal files beside it.
    static func checkPrivate(directory: String, of path: String) throws(DatabaseError) {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw DatabaseError(
                .invalidLocation,
                "cannot inspect the directory of SQLite database '\(path)'"
            )
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw DatabaseError(
                .invalidLocation,
                "the directory of SQLite database '\(path)' is open to group or others (mode \(String(mode, radix: 8))); run chmod 700 '\(directory)'"
            )
        }
    }
}

extension StoreDatabase {
    /// libpq's `sslmode=verify-full&sslrootcert=FILE` (or `verify-ca`): TLS required, the
    /// server's certificate checked against the CA certificates in FILE (PEM) only, not the
    /// system store, and (`verify-full`) its host name; TLS 1.2 or newer.
    /// - Throws: `DatabaseError` (`invalidLocation`) naming the file when it cannot be read or
    ///   holds no certificate, or when the mode turns TLS off or does not verify.
    static func verifiedTLS(caFile: String, mode: String?, location: DatabaseLocation)
        throws(DatabaseError) -> PostgresConnection.Configuration.TLS
    {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        switch mode?.lowercased() {
        case nil, "verify-full": tls.certificateVerification = .fullVerification
        case "verify-ca": tls.certificateVerification = .noHostnameVerification
        default:
            throw DatabaseError(
                .invalidLocation,
                "'\(location)': sslrootcert needs sslmode=verify-full (or verify-ca), not '\(mode ?? "")'"
            )
        }
        guard FileManager.default.isReadableFile(atPath: caFile) else {
            throw DatabaseError(.invalidLocation, "sslrootcert '\(caFile)' cannot be read")
        }
        do {
            let certificates = try NIOSSLCertificate.fromPEMFile(caFile)
            guard !certificates.isEmpty else {
                throw DatabaseError(.invalidLocation, "no certificate")
            }
            tls.trustRoots = .certificates(certificates)
            return .require(try NIOSSLContext(configuration: tls))
        } catch {
            throw DatabaseError(
                .invalidLocation,
                "sslrootcert '\(caFile)' holds no PEM CA certificate"
            )
        }
    }
}
