import Auth
import Foundation
import Logging
import Models
import SQLKit
import Testing

@testable import StoreServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 30, points 1 and 2: a failure between a write and the record of its answer never lets
/// a retry apply the write twice, and an unreachable database is a 503 on every route.
@Suite("store-server under injected database faults", .serialized)
struct FaultTests {
    /// Makes storing an idempotent request's answer fail, as a database trigger (on) or not.
    static func failIdempotencyRecords(_ location: DatabaseLocation, _ on: Bool) async throws {
        let database = try StoreDatabase(
            location: location,
            maxConnections: 1,
            logger: TestDatabases.logger
        )
        do {
            let statements: [String]
            switch (database.kind, on) {
            case (.sqlite, true):
                statements = [
                    """
                    CREATE TRIGGER fail_idempotency BEFORE UPDATE OF state ON idempotency_keys
                    WHEN NEW.state = 'done' BEGIN SELECT RAISE(ABORT, 'injected fault'); END
                    """
                ]
            case (.sqlite, false):
                statements = ["DROP TRIGGER fail_idempotency"]
            case (.postgres, true):
                statements = [
                    """
                    CREATE FUNCTION fail_idempotency() RETURNS trigger AS $$
                    BEGIN IF NEW.state = 'done' THEN RAISE EXCEPTION 'injected fault'; END IF;
                    RETURN NEW; END $$ LANGUAGE plpgsql
                    """,
                    """
                    CREATE TRIGGER fail_idempotency BEFORE UPDATE ON idempotency_keys
                    FOR EACH ROW EXECUTE FUNCTION fail_idempotency()
                    """,
                ]
            case (.postgres, false):
                statements = [
                    "DROP TRIGGER fail_idempotency ON idempotency_keys",
                    "DROP FUNCTION fail_idempotency()",
                ]
            }
            for statement in statements {
                try await database.sql.raw(SQLQueryString(statement)).run()
            }
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }

    static func booking(_ family: String) -> String {
        let (start, end) = openSlot(berlin, days: 3)
        return
            #"{"storeID": "\#(berlin.uuidString)", "startsAt": "\#(start)", "endsAt": "\#(end)", "partySize": 2, "topic": "Fitting", "customer": {"givenName": "Ida", "familyName": "\#(family)"}}"#
    }

    static func count(_ client: SignedClient, _ family: String) async throws -> Int {
        let page: Page<ReservationDetail> = try await client.send(
            "GET",
            "/v1/reservations?limit=200&query=\(family)"
        ).decode()
        return page.items.count
    }

    @Test(
        "a write whose idempotency record cannot be stored is rolled back with it; the retry applies it exactly once",
        arguments: DatabaseKind.allCases
    )
    func exactlyOnce(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, client in
            let family = "Faultline\(kind.rawValue.capitalized)"
            let booking = Self.booking(family)
            let confirmed = try await firstReservation(client, store: newYork)
            try await Self.failIdempotencyRecords(server.location, true)
            let key = "once-\(UUID().uuidString)"
            let failed = try await client.send(
                "POST",
                "/v1/reservations",
                json: booking,
                headers: ["Idempotency-Key": key]
            )
            #expect(failed.status == 500, "\(failed.text)")
            let booked = try await Self.count(client, family)
            #expect(booked == 0, "the booking was rolled back")
            let checkIn = "/v1/reservations/\(confirmed.id.uuidString)/check-in"
            let checkInKey = "once-check-in-\(UUID().uuidString)"
            let failedCheckIn = try await client.send(
                "POST",
                checkIn,
                headers: ["Idempotency-Key": checkInKey]
            )
            #expect(failedCheckIn.status == 500)
            let unchanged: ReservationDetail = try await client.send(
                "GET",
                "/v1/reservations/\(confirmed.id.uuidString)"
            ).decode()
            #expect(unchanged.reservation == confirmed.reservation, "the check-in was rolled back")

            try await Self.failIdempotencyRecords(server.location, false)
            let retried = try await client.send(
                "POST",
                "/v1/reservations",
                json: booking,
                headers: ["Idempotency-Key": key]
            )
            #expect(retried.status == 201, "\(retried.text)")
            #expect(retried.header("idempotency-replayed") == nil)
            let replayed = try await client.send(
                "POST",
                "/v1/reservations",
                json: booking,
                headers: ["Idempotency-Key": key]
            )
            #expect(replayed.status == 201 && replayed.data == retried.data)
            #expect(replayed.header("idempotency-replayed") == "true")
            let bookedAfter = try await Self.count(client, family)
            #expect(bookedAfter == 1)
            let checkedIn = try await client.send(
                "POST",
                checkIn,
                headers: ["Idempotency-Key": checkInKey]
            )
            #expect(checkedIn.status == 200)
            let after: ReservationDetail = try checkedIn.decode()
            #expect(after.reservation.version == confirmed.reservation.version + 1)
        }
    }

    @Test(
        "across two PostgreSQL instances: a write that failed on one is applied exactly once by the retry on the other"
    )
    func exactlyOnceAcrossInstances() async throws {
        let location = try await TestDatabases.make(.postgres)
        let first = try await TestServer.start(.postgres, location: location)
        let second = try await TestServer.start(.postgres, location: location)
        do {
            let one = try await first.client()
            let other = try await second.client()
            let booking = Self.booking("Crossline")
            try await Self.failIdempotencyRecords(location, true)
            let key = "across-\(UUID().uuidString)"
            let failed = try await one.send(
                "POST",
                "/v1/reservations",
                json: booking,
                headers: ["Idempotency-Key": key]
            )
            #expect(failed.status == 500)
            try await Self.failIdempotencyRecords(location, false)
            let retried = try await other.send(
                "POST",
                "/v1/reservations",
                json: booking,
                headers: ["Idempotency-Key": key]
            )
            #expect(retried.status == 201, "\(retried.text)")
            let replayed = try await one.send(
                "POST",
                "/v1/reservations",
                json: booking,
                headers: ["Idempotency-Key": key]
            )
            #expect(
                replayed.header("idempotency-replayed") == "true" && replayed.data == retried.data
            )
            let booked = try await Self.count(one, "Crossline")
            #expect(booked == 1)
        } catch {
            await first.stop()
            await second.stop()
            throw error
        }
        await first.stop()
        await second.stop()
    }

    /// Takes a PostgreSQL database away from every client (and back).
    static func setOutage(_ location: DatabaseLocation, _ down: Bool) async throws {
        guard case .postgres(let url) = location else { return }
        let name = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let cluster = try await PostgresCluster.get()
        let allow = down ? "false" : "true"
        try await cluster.psql("ALTER DATABASE \(name) ALLOW_CONNECTIONS \(allow)")
        if down {
            try await cluster.psql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()"
            )
        }
    }

    /// Sends `route` with input good enough to reach the database.
    static func send(_ route: RegisteredRoute, server: TestServer, client: SignedClient, id: UUID)
        async throws -> HTTPReply
    {
        let path = route.path.replacingOccurrences(of: "{id}", with: id.uuidString)
            .replacingOccurrences(of: "{code}", with: "FK6S-Y95A")
            .replacingOccurrences(of: "{gtin}", with: "4006381333931")
        switch route.description {
        case "POST /v1/auth/token":
            return try await PlainHTTP.form(
                server.url.appendingPathComponent("v1/auth/token"),
                [("grant_type", "password"), ("username", "demo"), ("password", "wrong password")]
            )
        case "GET /v1/config/client":
            return try await PlainHTTP.send(
                "GET",
                URL(string: server.url.absoluteString + path + "?app=scan&version=0.1.0")!
            )
        case "POST /v1/auth/revoke":
            return try await client.send(
                "POST",
                path,
                body: Data("token=abc".utf8),
                headers: ["Content-Type": "application/x-www-form-urlencoded"]
            )
        case "POST /v1/reservations":
            return try await client.send("POST", path, json: booking("Outage"))
        case "GET /v1/customers":
            return try await client.send("GET", path + "?query=Vogel")
        case "POST /v1/customers":
            return try await client.send(
                "POST",
                path,
                json: #"{"fields": {"givenName": "Ida", "familyName": "Outage"}}"#
            )
        case "PATCH /v1/reservations/{id}":
            return try await client.send(
                "PATCH",
                path,
                json: #"{"notes": "window"}"#,
                headers: ["If-Match": "\"1\""]
            )
        default:
            if route.isPublic {
                return try await PlainHTTP.send(
                    route.method,
                    URL(string: server.url.absoluteString + path)!
                )
            }
            return try await client.send(route.method, path)
        }
    }

    @Test(
        "while the database cannot be reached every route answers 503 unavailable with Retry-After, never 500",
        arguments: DatabaseKind.allCases
    )
    func outage(kind: DatabaseKind) async throws {
        let faults = InjectedFaults()
        let server = try await TestServer.start(kind, faults: faults)
        do {
            let client = try await server.client()
            let id = try await firstReservation(client, store: newYork).id
            // First the whole database (PostgreSQL really refuses connections; SQLite, one
            // file, cannot be taken away from an open pool, so its statements fail by rule),
            // then only what the handlers need: sessions and nonces still answer.
            let outages: [(String, @Sendable (String) -> Bool)] = [
                ("everything", { _ in kind == .sqlite }),
                (
                    "handlers",
                    {
                        !$0.contains("auth_sessions") && !$0.contains("auth_tokens")
                            && !$0.contains("auth_nonces") && !$0.contains("user_stores")
                    }
                ),
            ]
            for (name, rule) in outages {
                faults.fail(when: rule)
                if name == "everything" { try await Self.setOutage(server.location, true) }
                for route in server.routes {
                    let reply = try await Self.send(route, server: server, client: client, id: id)
                    switch route.description {
                    case "POST /v1/auth/revoke" where name == "handlers",
                        "GET /v1/me" where name == "handlers":
                        // Revocation touches only the sessions, and the caller's user record
                        // is read with them: both still answer.
                        #expect(reply.status == 200, "\(name): \(route)")
                    case "GET /metrics", "GET /openapi.yaml":
                        #expect(reply.status == 200, "\(name): \(route)")
                    case "GET /health":
                        #expect(reply.status == 503, "\(name): \(route)")
                        #expect(try reply.decode(ServerHealth.self).status == "unavailable")
                    default:
                        #expect(reply.status == 503, "\(name): \(route): \(reply.text)")
                        #expect(reply.header("retry-after") != nil, "\(name): \(route)")
                        let type = try reply.problem().type
                        #expect(
                            type == ProblemType.unavailable || type == AuthProblemType.unavailable,
                            "\(name): \(route): \(type)"
                        )
                    }
                }
                if name == "everything" { try await Self.setOutage(server.location, false) }
                faults.fail(when: nil)
            }
            // And back: the same client goes on.
            #expect(try await client.send("GET", "/v1/reservations/\(id.uuidString)").status == 200)
        } catch {
            faults.fail(when: nil)
            try? await Self.setOutage(server.location, false)
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "a database that stops answering makes /health say 503 within its limit, not hang",
        arguments: DatabaseKind.allCases
    )
    func healthWhileTheDatabaseStalls(kind: DatabaseKind) async throws {
        let faults = InjectedFaults()
        let server = try await TestServer.start(kind, faults: faults)
        let health = URL(string: server.url.absoluteString + "/health")!
        do {
            #expect(try await PlainHTTP.send("GET", health).status == 200)
            // The health check's ping waits 20 s for an answer; the check gives up after 1 s.
            faults.stall { $0.contains("SELECT 1") }
            let clock = ContinuousClock()
            let started = clock.now
            let reply = try await PlainHTTP.send("GET", health)
            let waited = clock.now - started
            #expect(reply.status == 503)
            #expect(try reply.decode(ServerHealth.self).status == "unavailable")
            #expect(waited < .seconds(10), "health waited \(waited)")
            faults.stall(when: nil)
            #expect(try await PlainHTTP.send("GET", health).status == 200)
        } catch {
            faults.stall(when: nil)
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
