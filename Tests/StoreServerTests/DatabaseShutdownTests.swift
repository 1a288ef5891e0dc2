import Foundation
import SQLKit
import Testing

@testable import StoreServer

/// A SQLite statement still running when the database shuts down (a health check past its
/// limit, a request outliving a stop) gives its connection back after the pool has closed;
/// the connection is then closed on the SQLite thread pool, which must still be running.
@Suite("Shutting the database down while a statement runs", .serialized)
struct DatabaseShutdownTests {
    /// Descriptors of this process open on `path` or its `-wal` and `-shm` files.
    static func openDescriptors(to path: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            let target =
                (try? FileManager.default.destinationOfSymbolicLink(
                    atPath: "/proc/self/fd/\(fd)"
                )) ?? ""
            return target == path || target == path + "-wal" || target == path + "-shm"
        }.count
    }

    /// A new directory for a test's database, and the database's path in it.
    static func newDirectory() throws -> (directory: URL, path: String) {
        let directory = try TestDatabases.temporaryDirectory("shutdown")
        return (directory, directory.appendingPathComponent("store.sqlite").path)
    }

    /// A pool on the SQLite database at `path`.
    static func open(_ path: String) throws -> StoreDatabase {
        try StoreDatabase(location: .sqlite(path: path), logger: TestDatabases.logger)
    }

    @Test("the statement finishes, shutdown waits for it, and no descriptor stays open")
    func statementInFlight() async throws {
        let (directory, path) = try Self.newDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try Self.open(path)
        _ = try await database.sql.raw("SELECT 1 AS one").first()
        #expect(Self.openDescriptors(to: path) > 0)
        // About a tenth of a second of SQLite's own work on one connection.
        let slow = Task {
            try await database.sql.raw(
                """
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000)
                SELECT count(*) AS n FROM c
                """
            ).first()
        }
        while database.sqliteInUse.count == 0 { try await Task.sleep(for: .milliseconds(1)) }
        try await Task.sleep(for: .milliseconds(50))
        await database.shutdown()
        #expect(database.sqliteInUse.count == 0)
        let row = try await slow.value
        #expect(try row?.decode(column: "n", as: Int.self) == 1_000_000)
        #expect(Self.openDescriptors(to: path) == 0)
    }

    @Test(
        "connections still opening when the database shuts down are closed too",
        .timeLimit(.minutes(1))
    )
    func openingAtShutdown() async throws {
        let (directory, path) = try Self.newDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for _ in 0..<10 {
            let database = try Self.open(path)
            // Statements that make the pool open its connections, and a shutdown among them.
            let statements = (0..<6).map { _ in
                Task { try? await database.sql.raw("SELECT 1 AS one").first() }
            }
            // Shut down while a connection opens (they may all open and answer first).
            let deadline = ContinuousClock.now + .seconds(2)
            while database.sqliteConnections.openings == 0, ContinuousClock.now < deadline {
                await Task.yield()
            }
            await database.shutdown()
            for statement in statements { _ = await statement.value }
            #expect(database.sqliteConnections.settled)
            #expect(Self.openDescriptors(to: path) == 0)
        }
    }

    @Test(
        "a connection held past the wait is closed when it comes back, on a pool still running",
        .timeLimit(.minutes(1))
    )
    func heldPastTheWait() async throws {
        let (directory, path) = try Self.newDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try Self.open(path)
        let taken = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await database.withConnection { sql, _ in
                _ = try await sql.raw("SELECT 1 AS one").first()
                taken.continuation.yield()
                for await _ in release.stream { break }
                return try await sql.raw("SELECT 2 AS two").first()?.decode(
                    column: "two",
                    as: Int.self
                )
            }
        }
        for await _ in taken.stream { break }
        // Shutdown gives up waiting while the connection is still out, and returns.
        let started = ContinuousClock.now
        await database.shutdown(settleWithin: .milliseconds(200))
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(database.sqliteInUse.count == 1)
        #expect(Self.openDescriptors(to: path) > 0)
        // The connection still works, and closes when it comes back: before, the thread pool
        // had stopped, its close failed and freeing it trapped (a debug build) or leaked it.
        release.continuation.yield()
        #expect(try await holder.value == 2)
        let deadline = ContinuousClock.now + .seconds(20)
        while !database.sqliteConnections.settled || Self.openDescriptors(to: path) > 0,
            ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(database.sqliteConnections.settled)
        #expect(Self.openDescriptors(to: path) == 0)
    }
}
