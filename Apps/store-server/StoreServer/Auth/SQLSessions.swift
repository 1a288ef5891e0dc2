internal import Foundation
internal import SQLKit

/// Session housekeeping on the `auth_sessions` table.
enum SQLSessions {
    /// Revokes every open session of `subject` (password change, user removal).
    static func revokeAll(subject: String, database: StoreDatabase, now: Date = Date()) async throws
    {
        try await database.sql.raw(
            "UPDATE auth_sessions SET revoked_at = \(bind: DBTime.millis(now)) WHERE subject = \(bind: subject) AND revoked_at IS NULL"
        ).run()
    }
}
