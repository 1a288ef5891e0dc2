import Foundation
import SQLKit
import Testing

@testable import StoreServer

/// Issue 29: migration 501 clusters SQLite's replay window on its key (`WITHOUT ROWID`), so
/// a signed request's commit writes one page fewer. The window must survive the move: a
/// nonce recorded before it is still a replay after it.
@Suite("the replay window's table on SQLite")
struct NonceTableTests {
    @Test("migration 501 keeps every recorded nonce and leaves a table without rowids")
    func migrationKeepsTheWindow() async throws {
        let location = try await TestDatabases.make(.sqlite, demo: false)
        let database = try StoreDatabase(location: location, logger: TestDatabases.logger)
        let store = SQLNonceStore(database: database)
        let now: Int64 = 1_800_000_000
        try await Migrations.run(on: database, logger: TestDatabases.logger, upTo: 500)
        for index in 0..<50 {
            let outcome = try await store.record(
                keyID: "key-\(index % 5)",
                nonce: "nonce-\(index)",
                created: now,
                expiresAt: now + 300,
                now: now
            )
            #expect(outcome == .recorded)
        }

        let applied = try await Migrations.run(on: database, logger: TestDatabases.logger)
        #expect(applied == Migrations.all.map(\.version).filter { $0 > 500 })
        let schema = try await database.sql.raw(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'auth_nonces'"
        ).first()?.decode(column: "sql", as: String.self)
        #expect(schema?.contains("WITHOUT ROWID") == true, "\(schema ?? "no table")")
        let index = try await database.sql.raw(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'auth_nonces_by_expiry'"
        ).first()
        #expect(index != nil, "the expiry index was not made again")
        let count = try await database.sql.raw("SELECT COUNT(*) AS n FROM auth_nonces").first()?
            .decode(column: "n", as: Int.self)
        #expect(count == 50)

        // A nonce from before the move is a replay; a new one is recorded; an expired one
        // may be used again, as before.
        let replayed = try await store.record(
            keyID: "key-3",
            nonce: "nonce-3",
            created: now + 1,
            expiresAt: now + 301,
            now: now + 1
        )
        #expect(replayed == .replay)
        let fresh = try await store.record(
            keyID: "key-3",
            nonce: "nonce-new",
            created: now + 1,
            expiresAt: now + 301,
            now: now + 1
        )
        #expect(fresh == .recorded)
        let afterWindow = try await store.record(
            keyID: "key-3",
            nonce: "nonce-3",
            created: now + 400,
            expiresAt: now + 700,
            now: now + 400
        )
        #expect(afterWindow == .recorded)
        try await store.purge(now: now + 350)
        let left = try await database.sql.raw("SELECT COUNT(*) AS n FROM auth_nonces").first()?
            .decode(column: "n", as: Int.self)
        #expect(left == 1, "purge left \(left ?? -1) entries")
        await database.shutdown()
    }
}
