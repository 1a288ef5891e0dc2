import Auth
import Foundation
import Logging
import Models
import SQLKit
import Testing

@testable import StoreServer

/// Issue 29, point 5: past its cap of requests in flight the server answers 503 with
/// `Retry-After` at once, and `/health` still answers.
@Suite("load shedding: requests in flight")
struct LoadSheddingTests {
    @Test(
        "past a cap of 2 requests in flight a request is answered 503 with Retry-After, /health 200, and requests are taken again once the two end",
        arguments: DatabaseKind.allCases
    )
    func shedsPastTheCap(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind, maxRequestsInFlight: 2)
        let port = server.url.port!
        // Two sign-ins whose bodies never finish arriving: each holds its permit while the
        // server waits for the rest of the body.
        let holders = try (0..<2).map { _ in try SourcedSocket(port: port, source: "127.0.0.1") }
        for socket in holders {
            #expect(
                socket.send(
                    "POST /v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\ngrant_type="
                )
            )
        }
        // The third request is refused at once (the holders may need a moment to be routed:
        // seconds in a test process starved of CPU, so the wait is by the clock, generously).
        var shed: HTTPReply?
        let routed = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < routed {
            let reply = try await PlainHTTP.send(
                "GET",
                server.url.appendingPathComponent("openapi.yaml")
            )
            if reply.status == 503 {
                shed = reply
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let refused = try #require(shed, "no 503 while two requests were in flight")
        #expect(refused.header("retry-after") == "1")
        #expect(try refused.problem().detail?.contains("at its limit of requests at once") == true)
        let health = try await PlainHTTP.send("GET", server.url.appendingPathComponent("health"))
        #expect(health.status == 200)

        for socket in holders { socket.close() }
        var answered = 0
        let freed = ContinuousClock.now + .seconds(30)
        while answered != 200, ContinuousClock.now < freed {
            answered = try await PlainHTTP.send(
                "GET",
                server.url.appendingPathComponent("openapi.yaml")
            ).status
            if answered != 200 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(answered == 200)
        await server.stop()
    }
}

/// Issue 29, point 1: on PostgreSQL the replay window is an UNLOGGED table, which a crash of
/// the database empties; a signature made before that is refused, never accepted as fresh.
@Suite("the replay window across a database crash", .serialized)
struct ReplayFloorTests {
    /// Runs `statements` on `location` (what a test does to the database behind the server).
    static func run(_ location: DatabaseLocation, _ statements: [String]) async throws
        -> [any SQLRow]
    {
        let database = try StoreDatabase(location: location, logger: TestDatabases.logger)
        var rows: [any SQLRow] = []
        do {
            for statement in statements {
                rows = try await database.sql.raw(SQLQueryString(statement)).all()
            }
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
        return rows
    }

    @Test("the nonce table and its floor are unlogged on PostgreSQL")
    func unlogged() async throws {
        let server = try await TestServer.start(.postgres)
        let rows = try await Self.run(
            server.location,
            [
                "SELECT relname, relpersistence::text AS persistence FROM pg_class WHERE relname IN ('auth_nonces', 'auth_replay_floor') ORDER BY relname"
            ]
        )
        #expect(rows.count == 2)
        for row in rows { #expect(try row.string("persistence") == "u") }
        await server.stop()
    }

    @Test(
        "after a crash empties the unlogged window, a request signed before it is refused with 503, never accepted"
    )
    func signedBeforeTheCrash() async throws {
        let server = try await TestServer.start(.postgres)
        let client = try await SignedClient.signIn(
            server.url,
            username: DemoData.username,
            password: DemoData.password
        )
        let host = "\(server.url.host!):\(server.url.port!)"
        let port = server.url.port!
        func send(_ headers: [(String, String)]) async throws -> RawHTTP.Reply {
            try await RawHTTP.send(
                port: port,
                method: "GET",
                path: "/v1/me",
                host: host,
                headers: headers
            )
        }
        func signed() throws -> [(String, String)] {
            try RawHTTP.signedHeaders(
                directory: client.directory,
                method: "GET",
                host: host,
                path: "/v1/me"
            )
        }
        let before = try signed()
        #expect(try await send(before).status == 200)
        #expect(try await send(before).status == 401, "a replay")

        // What crash recovery does to unlogged tables: both are emptied together.
        _ = try await Self.run(server.location, ["TRUNCATE auth_nonces, auth_replay_floor"])
        let replay = try await send(before)
        #expect(replay.status == 503, "the nonce recorded before the crash is gone: refuse")
        #expect(replay.headers["retry-after"] == "1")
        // A new floor was set, ahead of the database's time by the future allowance (30 s).
        let floor = try #require(
            try await Self.run(server.location, ["SELECT since FROM auth_replay_floor"]).first
        )
        let since = try floor.int("since")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(since > now + 20_000 && since < now + 40_000)
        #expect(try await send(try signed()).status == 503, "signed inside the future allowance")
        #expect(try await send(before).status == 503, "still refused")

        // Once the database's time passes the floor (moved here instead of waiting 30 s),
        // fresh signatures are accepted and recorded again.
        _ = try await Self.run(
            server.location,
            ["UPDATE auth_replay_floor SET since = since - 31000"]
        )
        let fresh = try signed()
        #expect(try await send(fresh).status == 200)
        #expect(try await send(fresh).status == 401, "a replay of the new signature")
        await server.stop()
    }
}
