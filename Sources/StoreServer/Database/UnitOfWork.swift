internal import Foundation
internal import SQLKit
internal import Synchronization

/// The statements of one task that commit or roll back together: ``StoreDatabase/withUnitOfWork(_:)``
/// runs its body in one transaction on one connection, and every statement the body's task
/// sends through ``StoreDatabase/sql`` or ``StoreDatabase/transaction(_:)`` (a savepoint then)
/// joins it. The idempotency middleware runs each write this way, so the write and the record of
/// its answer are one commit: no failure between them can leave one without the other.
final class UnitOfWork: Sendable {
    /// The unit's connection, inside its transaction.
    let sql: any SQLDatabase
    /// The database it belongs to (a unit is never joined by another database's statements).
    let owner: ObjectIdentifier
    private let savepoints = Mutex(0)

    init(sql: any SQLDatabase, owner: ObjectIdentifier) {
        self.sql = sql
        self.owner = owner
    }

    /// Runs `body` in a savepoint: rolled back alone when it throws, kept (until the unit
    /// commits or rolls back) when it returns.
    func savepoint<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T)
        async throws -> T
    {
        let number = savepoints.withLock { count in
            count += 1
            return count
        }
        let name = "unit_savepoint_\(number)"
        try await sql.raw("SAVEPOINT \(unsafeRaw: name)").run()
        do {
            let result = try await body(sql)
            try await sql.raw("RELEASE SAVEPOINT \(unsafeRaw: name)").run()
            return result
        } catch {
            try? await sql.raw("ROLLBACK TO SAVEPOINT \(unsafeRaw: name)").run()
            try? await sql.raw("RELEASE SAVEPOINT \(unsafeRaw: name)").run()
            throw error
        }
    }
}

extension StoreDatabase {
    /// The unit of work the current task runs in.
    @TaskLocal static var unit: UnitOfWork?

    /// The current task's unit of work on this database, if any.
    var currentUnit: UnitOfWork? {
        guard let unit = Self.unit, unit.owner == ObjectIdentifier(self) else { return nil }
        return unit
    }

    /// Runs `body` as one unit of work: every statement its task sends to this database is
    /// part of one transaction, committed when `body` returns and rolled back when it throws.
    /// Inside a unit already, `body` simply joins it.
    func withUnitOfWork<T>(_ body: () async throws -> T) async throws -> T {
        if currentUnit != nil { return try await body() }
        return try await write {
            try await withConnection { sql, begin in
                try await sql.raw(SQLQueryString(begin)).run()
                do {
                    let unit = UnitOfWork(sql: sql, owner: ObjectIdentifier(self))
                    let result = try await Self.$unit.withValue(unit) { try await body() }
                    try await sql.raw("COMMIT").run()
                    return result
                } catch {
                    try? await sql.raw("ROLLBACK").run()
                    throw error
                }
            }
        }
    }
}
