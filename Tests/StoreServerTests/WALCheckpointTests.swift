import Foundation
import Logging
import SQLKit
import Testing

@testable import StoreServer

/// Issue 29: on SQLite the server checkpoints its WAL off the request path. Commits never
/// checkpoint (a checkpoint syncs the database, and every writer queued behind that commit
/// waited for it), and the WAL is rewound under steady reads, so it stays bounded.
@Suite("SQLite WAL checkpoints off the request path")
struct WALCheckpointTests {
    /// A fresh SQLite database with a table to write to, checkpointed by its owner or not.
    static func database(background: Bool) async throws -> (StoreDatabase, URL) {
        let directory = try TestDatabases.temporaryDirectory("wal")
        let path = directory.appendingPathComponent("store.sqlite").path
        let database = try StoreDatabase(
            location: .sqlite(path: path),
            maxConnections: 4,
            faults: nil,
            backgroundCheckpoints: background,
            logger: TestDatabases.logger
        )
        try await database.sql.raw("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)").run()
        return (database, directory)
    }

    /// Writes `count` rows of 2 KiB, one commit each, in this process's turn for the lock.
    static func write(_ database: StoreDatabase, count: Int, from start: Int = 0) async throws {
        let body = String(repeating: "x", count: 2_048)
        for id in start..<(start + count) {
            try await database.write {
                try await database.sql.raw(
                    "INSERT INTO notes (id, body) VALUES (\(bind: id), \(bind: body))"
                ).run()
            }
        }
    }

    /// One steady reader's read: a snapshot of the WAL (what holds a checkpoint back) taken
    /// through the primary key's last page, not a count of every row (which made these
    /// tests a tenth of the shared test process's CPU), then a short pause as between
    /// requests.
    static func read(_ database: StoreDatabase) async throws {
        _ = try await database.sql.raw("SELECT max(id) AS n FROM notes").first()
        // A cancelled reader ends at its loop's check, with its count.
        try? await Task.sleep(for: .milliseconds(1))
    }

    /// The server's checkpointer on `database`, every 20 ms, until the task is cancelled.
    static func checkpointing(_ database: StoreDatabase, restartFrames: Int)
        -> Task<Void, any Error>
    {
        let checkpointer = WALCheckpointer(
            database: database,
            logger: TestDatabases.logger,
            interval: .milliseconds(20),
            restartFrames: restartFrames
        )
        return Task { try await checkpointer.run() }
    }

    static func walSize(_ directory: URL) -> Int {
        let path = directory.appendingPathComponent("store.sqlite-wal").path
        return (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    @Test(
        "with background checkpoints a commit leaves the WAL uncopied; checkpoint() copies it all"
    )
    func commitsDoNotCheckpoint() async throws {
        let (database, directory) = try await Self.database(background: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // 3,000 commits of a page or more: past SQLite's 1,000-page automatic checkpoint.
        try await Self.write(database, count: 3_000)
        let result = try await database.checkpoint(restartFrames: .max)
        #expect(result.frames >= 3_000, "a commit checkpointed: \(result)")
        #expect(result.copied == result.frames)
        #expect(!result.restarted)
        await database.shutdown()
    }

    @Test("without them (admin commands) SQLite checkpoints on commit as usual")
    func ownersWithoutACheckpointerKeepSQLitesDefault() async throws {
        let (database, directory) = try await Self.database(background: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.write(database, count: 3_000)
        let result = try await database.checkpoint(restartFrames: .max)
        #expect(result.copied < 3_000, "nothing was left for an explicit checkpoint: \(result)")
        await database.shutdown()
    }

    @Test("under steady reads and writes the WAL is rewound: it stays bounded, rows all there")
    func walStaysBoundedUnderLoad() async throws {
        let (database, directory) = try await Self.database(background: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rounds = 8, perRound = 500
        let reading = Task {
            var reads = 0
            while !Task.isCancelled {
                try await Self.read(database)
                reads += 1
            }
            return reads
        }
        var restarts = 0
        var largest = 0
        for round in 0..<rounds {
            try await Self.write(database, count: perRound, from: round * perRound)
            // As the server's checkpointer does, rounds apart: a pass copies only what no
            // reader's snapshot still needs, and the WAL is rewound after one copied it all.
            for _ in 0..<50 {
                let result = try await database.checkpoint(restartFrames: 256)
                largest = max(largest, result.frames)
                if result.restarted {
                    restarts += 1
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        reading.cancel()
        let reads = (try? await reading.value) ?? 0
        // 4,000 commits of a 2 KiB row write at least 4,000 frames (16 MB); rewound after
        // each round, the WAL never holds much more than one round's.
        #expect(restarts == rounds, "restarted \(restarts) of \(rounds) rounds")
        #expect(largest < 2 * perRound * 4, "the WAL reached \(largest) frames")
        #expect(Self.walSize(directory) < 16 << 20, "WAL file \(Self.walSize(directory)) bytes")
        let count = try await database.sql.raw("SELECT count(*) AS n FROM notes").first()?
            .decode(column: "n", as: Int.self)
        #expect(count == rounds * perRound)
        #expect(reads > 0)
        await database.shutdown()
    }

    @Test("the server's checkpointer keeps the WAL bounded while rows are written and read")
    func checkpointerService() async throws {
        let (database, directory) = try await Self.database(background: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = Self.checkpointing(database, restartFrames: 256)
        let reading = Task {
            while !Task.isCancelled { try await Self.read(database) }
        }
        var largest = 0
        for round in 0..<12 {
            try await Self.write(database, count: 500, from: round * 500)
            largest = max(largest, Self.walSize(directory))
        }
        reading.cancel()
        service.cancel()
        // Both end before the pool closes (a connection still out would be leaked).
        _ = try? await reading.value
        try await service.value
        // 6,000 commits wrote at least 24 MB of frames (a 4 KiB frame or more each); a WAL
        // never rewound holds them all.
        #expect(largest < 16 << 20, "the WAL file reached \(largest) bytes")
        await database.shutdown()
    }
}

extension WALCheckpointTests {
    /// Readers whose snapshots overlap, so one is always open (another process, or a server
    /// busy with reads): the passive pass never copies the frames written since the oldest of
    /// them, and a rewind that waited for a fully copied WAL never came, so the WAL grew with
    /// every commit (43 MB in the shared test process under load, where the checkpointer
    /// test failed once).
    @Test("readers whose snapshots always overlap do not let the WAL grow without bound")
    func overlappingReadersCannotHoldTheWALOpen() async throws {
        let (database, directory) = try await Self.database(background: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = Self.checkpointing(database, restartFrames: 64)
        let other = try StoreDatabase(
            location: database.location,
            maxConnections: 2,
            logger: TestDatabases.logger
        )
        // Two readers, each holding a snapshot for 10 ms, the second 5 ms behind the first.
        let readers = (0..<2).map { index in
            Task {
                try await Task.sleep(for: .milliseconds(5 * index))
                while !Task.isCancelled {
                    try await other.withConnection { sql, _ in
                        try await sql.raw("BEGIN").run()
                        _ = try await sql.raw("SELECT max(id) AS n FROM notes").first()
                        try? await Task.sleep(for: .milliseconds(10))
                        try await sql.raw("COMMIT").run()
                    }
                }
            }
        }
        var largest = 0
        for round in 0..<8 {
            try await Self.write(database, count: 250, from: round * 250)
            largest = max(largest, Self.walSize(directory))
        }
        for reader in readers { reader.cancel() }
        for reader in readers { _ = try? await reader.value }
        service.cancel()
        try await service.value
        // The forced rewind comes at 4 × 64 frames (1 MiB of 4 KiB pages): about 2 MB seen.
        // Without it these 2,000 commits grew the WAL to 16-25 MB.
        #expect(largest < 8 << 20, "the WAL file reached \(largest) bytes")
        let count = try await database.sql.raw("SELECT count(*) AS n FROM notes").first()?
            .decode(column: "n", as: Int.self)
        #expect(count == 2_000)
        await other.shutdown()
        await database.shutdown()
    }

    @Test("a long read puts the rewind off for a round instead of holding writers for seconds")
    func longReaderDefersTheRewind() async throws {
        let (database, directory) = try await Self.database(background: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.write(database, count: 300)
        // A reader in another pool (as a backup or another process would be) opens its
        // snapshot after the last write, so a passive checkpoint copies everything, and holds
        // it until told.
        let other = try StoreDatabase(location: database.location, logger: TestDatabases.logger)
        let opened = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let reader = Task {
            try await other.withConnection { sql, _ in
                try await sql.raw("BEGIN").run()
                _ = try await sql.raw("SELECT count(*) AS n FROM notes").first()
                opened.continuation.yield()
                for await _ in release.stream { break }
                try await sql.raw("COMMIT").run()
            }
        }
        for await _ in opened.stream { break }
        let started = ContinuousClock.now
        let held = try await database.checkpoint(restartFrames: 1)
        let waited = ContinuousClock.now - started
        #expect(held.copied == held.frames)
        #expect(!held.restarted, "rewound under an open reader")
        #expect(waited < .seconds(2), "the rewind waited \(waited) for the reader")
        // Writes go on meanwhile, and once the reader is done the next round rewinds.
        try await Self.write(database, count: 10, from: 300)
        release.continuation.yield()
        try await reader.value
        let after = try await database.checkpoint(restartFrames: 1)
        #expect(after.restarted, "\(after)")
        await other.shutdown()
        await database.shutdown()
    }
}
