internal import Foundation
internal import SQLKit

/// Secrets the server keeps to itself, one per purpose, made once (by whichever instance comes
/// first) and shared by every instance through the database.
enum ServerSecrets {
    /// The 32 bytes named `name`, made at random when there are none yet.
    static func value(of name: String, in database: StoreDatabase) async throws -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        let fresh = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try await database.sql.raw(
            """
            INSERT INTO server_secrets (name, value) VALUES (\(bind: name), \(bind: Data(fresh).base64EncodedString()))
            ON CONFLICT (name) DO NOTHING
            """
        ).run()
        guard
            let row = try await database.sql.raw(
                "SELECT value FROM server_secrets WHERE name = \(bind: name)"
            ).first(),
            let data = Data(base64Encoded: try row.string("value")), data.count >= 32
        else { throw StoredDataError("server secret \(name) is missing or damaged") }
        return Array(data)
    }
}
