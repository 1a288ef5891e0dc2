import Foundation
import Models
import SQLKit
import Testing

@testable import StoreServer

/// Issue 24, point 6: what a sign-in leaves behind, in the log and in the database.
@Suite("sign-in hygiene", .serialized)
struct SignInHygieneTests {
    @Test(
        "a refused sign-in names only a user that exists: neither a forged line nor a password typed as a user name reaches the log",
        arguments: DatabaseKind.allCases
    )
    func userNamesInLogs(kind: DatabaseKind) async throws {
        let log = LogLines()
        let server = try await TestServer.start(kind, logger: log.logger)
        do {
            for username in [
                "ana\ninfo sign-in accepted username=admin", "Tr0ub4dor-and-3", DemoData.username,
            ] {
                let reply = try await SignInAttackTests.attempt(
                    server,
                    user: username,
                    password: "wrong password"
                )
                #expect(reply.status == 401, "\(username)")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        let refusals = log.all.filter { $0.contains("sign-in refused") }
        #expect(refusals.count == 3, "\(refusals)")
        #expect(!log.all.contains { $0.contains("sign-in accepted") || $0.contains("Tr0ub4dor") })
        #expect(refusals.filter { $0.contains("username=(unknown user)") }.count == 2)
        #expect(refusals.contains { $0.contains("username=\(DemoData.username)") })
    }

    @Test(
        "failed sign-ins are purged once their window has passed, and not before",
        arguments: DatabaseKind.allCases
    )
    func failuresPurged(kind: DatabaseKind) async throws {
        let database = try await prepareDatabase(
            try await TestDatabases.make(kind, demo: false),
            logger: TestDatabases.logger
        )
        do {
            let limiter = SignInLimiter(database: database)
            let start = Date()
            for address in ["203.0.113.1", "203.0.113.2"] {
                let attempt = try await limiter.reserve(
                    username: "ana",
                    address: address,
                    now: start
                )
                try await limiter.finish(attempt, succeeded: false, now: start)
            }
            func rows() async throws -> Int64 {
                let row = try await database.sql.raw(
                    "SELECT COUNT(*) AS n FROM signin_attempts"
                ).first()
                return try row?.int("n") ?? -1
            }
            #expect(try await rows() == 5, "two pairs, the user, two addresses")
            let window = TimeInterval(limiter.policy.window)
            try await limiter.purge(now: start + window - 1)
            #expect(try await rows() == 5)
            try await limiter.purge(now: start + window + 1)
            #expect(try await rows() == 0)
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}
