internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models
internal import NIOCore
internal import SQLKit

/// `Idempotency-Key` records in the database, shared by every instance.
///
/// The first request with a key reserves it: one `INSERT … ON CONFLICT DO NOTHING` of a
/// `pending` record with a random owner token (of concurrent requests, in any process, exactly
/// one wins), committed before the request runs. The request then runs as one unit of work
/// whose last statement completes the record with the answer (status, body, `ETag`/`Location`)
/// only if the request still owns it: the write and its record commit together or not at all.
/// Every other request with the key waits for that answer and returns it with
/// `Idempotency-Replayed: true`. A record whose owner died (its lock passed without an answer:
/// nothing was applied, since the answer commits with the write) is taken over by the next
/// request; the old owner, should it still try to finish, no longer owns it and rolls back.
/// 5xx answers are not kept, so a retry runs again. Records are kept for 24 hours.
struct IdempotencyStore: Sendable {
    let database: StoreDatabase
    /// How long a pending record belongs to its owner before another request may take over.
    var lockSeconds: Int64 = 30
    /// How long a request waits for another's answer before giving up with a 409.
    var waitSeconds: Double = 30

    struct StoredResponse: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    enum Outcome {
        /// Run the request; complete or abandon the record as `owner`.
        case proceed(owner: String)
        case replay(StoredResponse)
    }

    /// The record was taken over by another request (this one ran past its lock): its write
    /// must not be kept.
    struct LostClaim: Error, CustomStringConvertible {
        var description: String { "the Idempotency-Key record was taken over by a retry" }
    }

    /// Checks a key's form: 1–255 visible ASCII characters.
    static func validate(_ key: String) throws(APIError) {
        guard !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
        else {
            throw APIError.badRequest(
                "header 'Idempotency-Key' must be 1 to 255 visible ASCII characters"
            )
        }
    }

    /// Claims `key` for this request, or returns the answer of the request that claimed it
    /// first (waiting for it while it runs).
    func begin(subject: String, key: String, fingerprint: String) async throws -> Outcome {
        let deadline = Date() + waitSeconds
        var delay: UInt64 = 2_000_000
        let owner = UUID().uuidString
        while true {
            let now = DBTime.millis(Date())
            let inserted = try await database.sql.raw(
                """
                INSERT INTO idempotency_keys (subject, key, fingerprint, state, created_at, locked_until, owner)
                VALUES (\(bind: subject), \(bind: key), \(bind: fingerprint), 'pending', \(bind: now), \(bind: now + lockSeconds * 1000), \(bind: owner))
                ON CONFLICT (subject, key) DO NOTHING RETURNING key
                """
            ).all()
            if !inserted.isEmpty { return .proceed(owner: owner) }
            guard
                let row = try await database.sql.raw(
                    "SELECT fingerprint, state, status, headers, body, locked_until FROM idempotency_keys WHERE subject = \(bind: subject) AND key = \(bind: key)"
                ).first()
            else { continue }  // deleted meanwhile (a 5xx answer): claim it again
            guard try row.string("fingerprint") == fingerprint else {
                throw APIError(
                    APIProblem(
                        type: ProblemType.idempotencyKeyReused,
                        title: "Idempotency key reused",
                        status: 422,
                        detail:
                            "Idempotency-Key '\(key.prefix(64))' was used with a different method, path or body"
                    )
                )
            }
            if try row.string("state") == "done" {
                let headersText = try row.optionalString("headers") ?? "{}"
                let headers =
                    (try? JSONDecoder().decode([String: String].self, from: Data(headersText.utf8)))
                    ?? [:]
                return .replay(
                    StoredResponse(
                        status: Int(try row.optionalInt("status") ?? 200),
                        headers: headers,
                        body: try row.decodeNil(column: "body")
                            ? Data() : row.decode(column: "body", as: Data.self)
                    )
                )
            }
            let lockedUntil = try row.int("locked_until")
            if lockedUntil < now {
                let taken = try await database.sql.raw(
                    """
                    UPDATE idempotency_keys SET locked_until = \(bind: now + lockSeconds * 1000), owner = \(bind: owner)
                    WHERE subject = \(bind: subject) AND key = \(bind: key) AND state = 'pending' AND locked_until = \(bind: lockedUntil)
                    RETURNING key
                    """
                ).all()
                if !taken.isEmpty { return .proceed(owner: owner) }
            }
            guard Date() < deadline else {
                throw APIError(
                    APIProblem(
                        type: ProblemType.idempotencyKeyInUse,
                        title: "Idempotency key in use",
                        status: 409,
                        detail:
                            "the first request with Idempotency-Key '\(key.prefix(64))' is still running; retry later"
                    ),
                    headers: [(.retryAfter, "1")]
                )
            }
            try await Task.sleep(nanoseconds: delay)
            delay = min(delay * 2, 50_000_000)
        }
    }

    /// Stores the final answer of the request that claimed `key` as `owner`; run it as the last
    /// statement of the request's unit of work, so the answer commits with the write.
    /// - Throws: ``LostClaim`` when another request took the record over meanwhile.
    func complete(subject: String, key: String, owner: String, response: StoredResponse)
        async throws
    {
        let headers = String(
            decoding: try JSONEncoder.shopfloor.encode(response.headers),
            as: UTF8.self
        )
        let updated = try await database.sql.raw(
            """
            UPDATE idempotency_keys SET state = 'done', status = \(bind: response.status), headers = \(bind: headers), body = \(bind: response.body)
            WHERE subject = \(bind: subject) AND key = \(bind: key) AND state = 'pending' AND owner = \(bind: owner)
            RETURNING key
            """
        ).all()
        guard !updated.isEmpty else { throw LostClaim() }
    }

    /// Gives a key up (nothing was kept: a 5xx answer, a failure), so a retry runs again.
    func abandon(subject: String, key: String, owner: String) async throws {
        try await database.sql.raw(
            """
            DELETE FROM idempotency_keys
            WHERE subject = \(bind: subject) AND key = \(bind: key) AND state = 'pending' AND owner = \(bind: owner)
            """
        ).run()
    }

    /// Deletes records older than `date`.
    func purge(olderThan date: Date) async throws {
        try await database.sql.raw(
            "DELETE FROM idempotency_keys WHERE created_at < \(bind: DBTime.millis(date))"
        ).run()
    }
}
