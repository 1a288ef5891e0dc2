internal import Foundation
internal import Logging
internal import SQLKit
internal import Synchronization

/// The database's time, which every instance shares: the replay window of signed requests and
/// the expiry of their nonces are judged by it, so an instance whose own clock is off can neither
/// refuse good requests nor accept a replay another instance has already forgotten. The offset
/// from this machine's clock is measured at start and again by the housekeeping (every minute);
/// between measurements the time is this machine's clock plus the last offset.
final class DatabaseClock: Sendable {
    private let database: StoreDatabase
    private let local: @Sendable () -> Date
    private let offset = Mutex<TimeInterval>(0)

    /// A clock on `database`; `local` is this machine's clock (tests shift it).
    init(database: StoreDatabase, local: @escaping @Sendable () -> Date = { Date() }) {
        self.database = database
        self.local = local
    }

    /// The database's time now.
    func now() -> Date { local() + offset.withLock { $0 } }

    /// Measures the offset again (half the query's round trip counted as its delay).
    func synchronize() async throws {
        let sent = local()
        let query: SQLQueryString =
            database.kind == .sqlite
            ? "SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) AS now"
            : "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) AS now"
        guard let row = try await database.sql.raw(query).first() else { return }
        let received = local()
        let databaseTime = DBTime.date(try row.int("now"))
        let middle = sent + received.timeIntervalSince(sent) / 2
        offset.withLock { $0 = databaseTime.timeIntervalSince(middle) }
    }
}
