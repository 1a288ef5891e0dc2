import Foundation
import SQLKit
import Testing

@testable import StoreServer

/// A SQLite statement still running when the database shuts down (a health check past its
/// limit, a request outliving a stop) gives its connection back after the pool has closed;
/// the connection is then closed on the SQLite thread pool, which must still be running.
@Suite("Shutting the database down while a statement runs")
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

    @Test("the statement finishes, shutdown waits for it, and no descriptor stays open")
    func statementInFlight() async throws {
        let directory = try TestDatabases.temporaryDirectory("shutdown")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let database = try StoreDatabase(
            location: .sqlite(path: path),
            logger: TestDatabases.logger
        )
        _ = try await database.sql.raw("SELECT 1 AS one").first()
        #expect(Self.openDescriptors(to: path) > 0)
        // About half a second of SQLite's own work on one connection.
        let slow = Task {
            try await database.sql.raw(
                """
                WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000)
                SELECT count(*) AS n FROM c
                """
            ).first()
        }
        while database.sqliteInUse.count == 0 { try await Task.sleep(for: .milliseconds(1)) }
        try await Task.sleep(for: .milliseconds(50))
        await database.shutdown()
        #expect(database.sqliteInUse.count == 0)
        let row = try await slow.value
        #expect(try row?.decode(column: "n", as: Int.self) == 4_000_000)
        #expect(Self.openDescriptors(to: path) == 0)
    }
}
