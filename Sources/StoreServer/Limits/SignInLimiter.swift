internal import Foundation
internal import Models
internal import SQLKit

/// Failed sign-ins, counted in the database so every instance enforces the same limits, and
/// each attempt reserved by one atomic statement before its password is hashed: of any number
/// of parallel guesses, no more than a bucket's limit ever reach the password check.
///
/// Three buckets per attempt:
/// - the user name from one client address: after `pairFailures` failures in the window that
///   pair is locked until the window passes, so guessing from one place stops, while the same
///   user signing in from an address without failures still can;
/// - the user name from anywhere: after `userFailures` failures, attempts are slowed to one per
///   `userDelay` (delayed, never locked: nobody can lock another user out);
/// - the address for any user name: after `addressFailures`, one attempt per `addressDelay`.
///
/// A reserved attempt counts as in flight until ``finish(_:succeeded:now:)``; one whose process
/// died is forgotten when its window passes.
struct SignInLimiter: Sendable {
    let database: StoreDatabase
    var policy = Policy()

    /// The limits.
    struct Policy: Sendable, Equatable {
        var window: Int64 = 900
        var pairFailures = 5
        var userFailures = 20
        var userDelay: Int64 = 10
        var addressFailures = 100
        var addressDelay: Int64 = 1
    }

    /// A reserved attempt: the buckets it holds.
    struct Attempt: Sendable {
        var buckets: [String]
        var pair: String
    }

    private struct Bucket {
        var name: String
        var limit: Int
        var delay: Int64
    }

    private func buckets(username: String, address: String) -> [Bucket] {
        let user = username.lowercased()
        return [
            Bucket(name: "pair:\(user)|\(address)", limit: policy.pairFailures, delay: 0),
            Bucket(name: "user:\(user)", limit: policy.userFailures, delay: policy.userDelay),
            Bucket(
                name: "addr:\(address)",
                limit: policy.addressFailures,
                delay: policy.addressDelay
            ),
        ]
    }

    /// Reserves an attempt in every bucket, or refuses with the seconds to wait.
    /// - Throws: ``Refused`` when a bucket is full (nothing stays reserved then).
    func reserve(username: String, address: String, now: Date) async throws -> Attempt {
        let nowMillis = DBTime.millis(now)
        let cutoff = nowMillis - policy.window * 1000
        var held: [String] = []
        for bucket in buckets(username: username, address: address) {
            let reserved = try await database.sql.raw(
                """
                INSERT INTO signin_attempts (bucket, failures, in_flight, window_start, last_attempt)
                VALUES (\(bind: bucket.name), 0, 1, \(bind: nowMillis), \(bind: nowMillis))
                ON CONFLICT (bucket) DO UPDATE SET
                    failures = CASE WHEN signin_attempts.window_start < \(bind: cutoff) THEN 0 ELSE signin_attempts.failures END,
                    in_flight = CASE WHEN signin_attempts.window_start < \(bind: cutoff) THEN 1 ELSE signin_attempts.in_flight + 1 END,
                    window_start = CASE WHEN signin_attempts.window_start < \(bind: cutoff) THEN \(bind: nowMillis) ELSE signin_attempts.window_start END,
                    last_attempt = \(bind: nowMillis)
                WHERE signin_attempts.window_start < \(bind: cutoff)
                    OR signin_attempts.failures + signin_attempts.in_flight < \(bind: bucket.limit)
                    OR (\(bind: bucket.delay) > 0 AND signin_attempts.in_flight = 0
                        AND signin_attempts.last_attempt <= \(bind: nowMillis - bucket.delay * 1000))
                RETURNING bucket
                """
            ).all()
            guard !reserved.isEmpty else {
                if !held.isEmpty { try await release(held) }
                throw Refused(seconds: try await wait(bucket, now: nowMillis))
            }
            held.append(bucket.name)
        }
        return Attempt(buckets: held, pair: held[0])
    }

    /// Ends a reserved attempt: a success clears the pair's failures, a failure counts in
    /// every bucket.
    func finish(_ attempt: Attempt, succeeded: Bool, now: Date) async throws {
        if succeeded {
            try await database.sql.raw(
                "DELETE FROM signin_attempts WHERE bucket = \(bind: attempt.pair)"
            ).run()
            try await release(attempt.buckets.filter { $0 != attempt.pair })
        } else {
            try await database.sql.raw(
                """
                UPDATE signin_attempts SET failures = failures + 1,
                    in_flight = CASE WHEN in_flight > 0 THEN in_flight - 1 ELSE 0 END
                WHERE bucket IN (\(binds: attempt.buckets))
                """
            ).run()
        }
    }

    /// Deletes buckets whose window passed with nothing in flight (housekeeping).
    func purge(now: Date) async throws {
        try await database.sql.raw(
            """
            DELETE FROM signin_attempts
            WHERE window_start < \(bind: DBTime.millis(now) - policy.window * 1000) AND in_flight = 0
            """
        ).run()
    }

    private func release(_ buckets: [String]) async throws {
        guard !buckets.isEmpty else { return }
        try await database.sql.raw(
            """
            UPDATE signin_attempts SET in_flight = CASE WHEN in_flight > 0 THEN in_flight - 1 ELSE 0 END
            WHERE bucket IN (\(binds: buckets))
            """
        ).run()
    }

    /// Seconds until `bucket` takes an attempt again.
    private func wait(_ bucket: Bucket, now: Int64) async throws -> Int64 {
        guard
            let row = try await database.sql.raw(
                "SELECT failures, window_start, last_attempt FROM signin_attempts WHERE bucket = \(bind: bucket.name)"
            ).first()
        else { return 1 }
        let windowEnd = try row.int("window_start") + policy.window * 1000
        var until = windowEnd
        if bucket.delay > 0 {
            until = min(until, try row.int("last_attempt") + bucket.delay * 1000)
        }
        return max(1, (until - now + 999) / 1000)
    }

    /// A refused attempt.
    struct Refused: Error {
        var seconds: Int64
    }
}
