internal import Foundation
public import Logging
internal import Plumbing
internal import SQLKit

#if canImport(Glibc)
    internal import Glibc
#endif

/// The schema of a database against this server's migrations (`migrate --status`).
public struct MigrationStatus: Sendable, Equatable {
    /// One migration step.
    public struct Step: Sendable, Equatable {
        /// Its version.
        public var version: Int
        /// What it does.
        public var name: String
    }

    /// The database's schema version (0 for an empty database).
    public var current: Int
    /// The newest version this server knows.
    public var latest: Int
    /// The steps `migrate` would apply, oldest first.
    public var pending: [Step]

    /// True when nothing is pending and the database is not newer than this server.
    public var isUpToDate: Bool { pending.isEmpty && current <= latest }
}

/// Operating the database: its migration status and SQLite backups.
public enum Maintenance {
    /// The schema version of `location` and the steps pending, without changing anything.
    /// - Throws: `DatabaseError` when the database cannot be opened or read.
    public static func migrationStatus(_ location: DatabaseLocation, logger: Logger)
        async throws -> MigrationStatus
    {
        if case .sqlite(let path) = location, !FileManager.default.fileExists(atPath: path) {
            return status(current: 0)
        }
        let database = try StoreDatabase(location: location, maxConnections: 1, logger: logger)
        do {
            let exists = try await database.sql.raw(
                database.kind == .sqlite
                    ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
                    : "SELECT tablename AS name FROM pg_tables WHERE tablename = 'schema_migrations'"
            ).first()
            let current = exists == nil ? 0 : try await Migrations.currentVersion(database.sql)
            await database.shutdown()
            return status(current: current)
        } catch {
            await database.shutdown()
            throw DatabaseError(
                .unavailable,
                "cannot read the schema version of '\(location)'",
                cause: error
            )
        }
    }

    private static func status(current: Int) -> MigrationStatus {
        MigrationStatus(
            current: current,
            latest: Migrations.latest,
            pending: Migrations.all.filter { $0.version > current }.map {
                MigrationStatus.Step(version: $0.version, name: $0.name)
            }
        )
    }

    /// Copies the SQLite database at `location` to `destination`: an online, consistent copy
    /// (SQLite's `VACUUM INTO`, taken while the server runs), written `0600` through the
    /// suite's file writer so a reader never sees half a file. To restore it, stop the
    /// server, copy it over the database file (removing the `-wal` and `-shm` files next to
    /// it), and start the server.
    /// - Throws: `DatabaseError` (`invalidLocation`) for a PostgreSQL database (use `pg_dump`),
    ///   a missing database or an existing `destination`; `unavailable` when the copy fails.
    public static func backup(
        _ location: DatabaseLocation,
        to destination: String,
        logger: Logger
    ) async throws {
        guard case .sqlite(let path) = location else {
            throw DatabaseError(
                .invalidLocation,
                "backup copies SQLite databases; back up PostgreSQL '\(location)' with pg_dump (docs/DEPLOY.md)"
            )
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw DatabaseError(.invalidLocation, "no SQLite database at '\(path)'")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw DatabaseError(
                .invalidLocation,
                "'\(destination)' exists; a backup never overwrites a file"
            )
        }
        let directory = URL(fileURLWithPath: destination).deletingLastPathComponent().path
        var template = Array("\(directory)/.store-server-backup-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw DatabaseError(
                .invalidLocation,
                "cannot write into the directory of '\(destination)'"
            )
        }
        let scratch = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let copy = scratch + "/copy.sqlite"
        let database = try StoreDatabase(location: location, maxConnections: 1, logger: logger)
        do {
            try await database.sql.raw("VACUUM INTO \(bind: copy)").run()
            await database.shutdown()
        } catch {
            await database.shutdown()
            throw DatabaseError(.unavailable, "cannot copy '\(path)'", cause: error)
        }
        do {
            let bytes = try FileIO.readFile(atPath: copy, limit: Int.max)
            try FileIO.replaceFile(atPath: destination, with: bytes, permissions: 0o600)
        } catch {
            throw DatabaseError(.unavailable, "cannot write '\(destination)'", cause: error)
        }
        logger.info("backup written", metadata: ["file": "\(destination)"])
    }
}
