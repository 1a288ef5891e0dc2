internal import Logging
internal import NIOCore
internal import SQLKit
internal import SQLiteKit

/// Opens SQLite connections with the pragmas the server relies on.
struct PragmaSQLiteSource: ConnectionPoolSource {
    /// How long, in milliseconds, a statement waits for SQLite's locks before it fails busy.
    static let busyTimeout = 10_000
    /// How long, in milliseconds, the WAL rewind tries before it is put off to a later round
    /// (`StoreDatabase.rewind`, with SQLite's busy handler off).
    static let rewindBusyTimeout = 1_000
    /// Whether a commit checkpoints the WAL when it has grown past 1,000 pages (SQLite's
    /// default); false when the owner checkpoints in the background.
    let autoCheckpoint: Bool
    let tracker: SQLiteConnectionTracker
    let base: SQLiteConnectionSource

    func makeConnection(logger: Logger, on eventLoop: any EventLoop) -> EventLoopFuture<
        SQLiteConnection
    > {
        let autoCheckpoint = autoCheckpoint
        let tracker = tracker
        tracker.opening()
        let made = base.makeConnection(logger: logger, on: eventLoop)
        made.whenSuccess { tracker.made($0) }
        made.whenComplete { _ in tracker.opened() }
        return made.flatMap { connection in
            connection.query("PRAGMA busy_timeout = \(Self.busyTimeout)")
                .flatMap { _ in connection.query("PRAGMA journal_mode = WAL") }
                .flatMap { _ in connection.query("PRAGMA synchronous = NORMAL") }
                .flatMap { _ in
                    connection.query("PRAGMA wal_autocheckpoint = \(autoCheckpoint ? 1000 : 0)")
                }
                .flatMap { _ in connection.query("PRAGMA journal_size_limit = 67108864") }
                .map { _ in connection }
                .flatMapError { error in
                    connection.close().flatMapThrowing { throw error }
                }
        }
    }
}

/// SQLKit over a pool of SQLite connections: each statement on whichever connection is free.
// The pool is safe from any thread (see `StoreDatabase.Pool`).
struct PooledSQLite: SQLDatabase, @unchecked Sendable {
    let pool: EventLoopGroupConnectionPool<PragmaSQLiteSource>
    let logger: Logger
    let inUse: InUseCount

    var eventLoop: any EventLoop { pool.eventLoopGroup.any() }
    var dialect: any SQLDialect { SQLiteDialect() }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void)
        -> EventLoopFuture<Void>
    {
        inUse.take()
        let inUse = inUse
        // AsyncKit gives the connection back before the returned future's callbacks run.
        return pool.withConnection(logger: logger) { connection in
            connection.sql(queryLogLevel: nil).execute(sql: query, onRow)
        }
        .always { _ in inUse.giveBack() }
    }
}
