import Auth
import Foundation
import Models
import Testing

@testable import StoreServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Issue 30, points 3 and 4 (the server's half): text the database cannot store, peers that
/// stall or send what the parser rejects, and a stop that cannot be held up.
@Suite("store-server against hostile input and stuck peers", .serialized)
struct HostileInputTests {
    /// A cursor of this server's form whose values hold NUL.
    static let forgedCursor: String = {
        let text = ["v1", "\u{0}", "x"].joined(separator: "\u{1F}")
        return Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }()

    @Test(
        "text the database cannot store is a 400 naming the field on every kind of input, checked before any query",
        arguments: DatabaseKind.allCases
    )
    func unstorableText(kind: DatabaseKind) async throws {
        let faults = InjectedFaults()
        let server = try await TestServer.start(kind, faults: faults)
        do {
            let client = try await server.client()
            let detail = try await firstReservation(client, store: berlin)
            let (start, end) = openSlot(berlin, days: 2)
            func booking(
                topic: String = "Fitting",
                notes: String = "",
                customer: String = #""givenName": "Ida", "familyName": "Nul""#
            ) -> String {
                #"{"storeID": "\#(berlin.uuidString)", "startsAt": "\#(start)", "endsAt": "\#(end)", "partySize": 2, "topic": "\#(topic)", "notes": "\#(notes)", "customer": {\#(customer)}}"#
            }
            // From here on a query that reaches the database fails: a 400 proves the check
            // came first (sessions and nonces still answer, so requests are signed in).
            faults.fail(when: { !$0.contains("auth_") && !$0.contains("user_stores") })
            let signed: [(String, String, String?, [String: String], String)] = [
                ("GET", "/v1/customers?query=%00", nil, [:], "'query'"),
                ("GET", "/v1/customers?query=a%01b", nil, [:], "'query'"),
                ("GET", "/v1/customers?query=%FF", nil, [:], "'query'"),
                ("GET", "/v1/reservations?query=Vogel%00", nil, [:], "'query'"),
                ("GET", "/v1/reservations?date=2026-01-01%00", nil, [:], "'date'"),
                ("GET", "/v1/reservations?status=confirmed%00", nil, [:], "'status'"),
                ("GET", "/v1/reservations?store=%00", nil, [:], "'store'"),
                ("GET", "/v1/products?query=%00", nil, [:], "'query'"),
                ("GET", "/v1/stores?cursor=\(Self.forgedCursor)", nil, [:], "'cursor'"),
                ("GET", "/v1/customers?cursor=\(Self.forgedCursor)", nil, [:], "'cursor'"),
                ("GET", "/v1/products?cursor=\(Self.forgedCursor)", nil, [:], "'cursor'"),
                ("GET", "/v1/reservations/by-code/%00", nil, [:], "'code'"),
                ("GET", "/v1/customers/%00", nil, [:], "'id'"),
                ("POST", "/v1/reservations", booking(topic: #"Fit\u0000ting"#), [:], "'topic'"),
                ("POST", "/v1/reservations", booking(notes: #"\u0000"#), [:], "'notes'"),
                ("POST", "/v1/reservations", booking(topic: #"\ud800"#), [:], "'topic'"),
                ("POST", "/v1/reservations", booking(notes: #"a\udc00b"#), [:], "'notes'"),
                (
                    "POST", "/v1/reservations",
                    booking(customer: #""givenName": "I\u0000da", "familyName": "Nul""#), [:],
                    "'customer.givenName'"
                ),
                (
                    "POST", "/v1/reservations", booking(customer: #""\u0000": "x""#), [:],
                    "'customer'"
                ),
                (
                    "POST", "/v1/customers",
                    #"{"fields": {"givenName": "Ida", "familyName": "\ud83d"}}"#,
                    [:], "'fields.familyName'"
                ),
                (
                    "PATCH", "/v1/reservations/\(detail.id.uuidString)",
                    #"{"notes": "late\u0000"}"#,
                    ["If-Match": "\"\(detail.reservation.version)\""], "'notes'"
                ),
            ]
            for (method, path, json, headers, mention) in signed {
                let reply = try await client.send(method, path, json: json, headers: headers)
                #expect(reply.status == 400, "\(method) \(path): \(reply.text)")
                #expect(try reply.problem().detail?.contains(mention) == true, "\(method) \(path)")
            }
            let revoke = try await client.send(
                "POST",
                "/v1/auth/revoke",
                body: Data("token=%00".utf8),
                headers: ["Content-Type": "application/x-www-form-urlencoded"]
            )
            #expect(revoke.status == 400)
            #expect(try revoke.problem().detail?.contains("'token'") == true)
            faults.fail(when: { _ in true })
            let token = server.url.appendingPathComponent("v1/auth/token")
            for (form, field) in [
                (
                    [("grant_type", "password"), ("username", "\u{0}"), ("password", "x")],
                    "'username'"
                ),
                (
                    [("grant_type", "password"), ("username", "demo"), ("password", "a\u{0}")],
                    "'password'"
                ),
                ([("grant_type", "refresh_token"), ("refresh_token", "\u{0}")], "'refresh_token'"),
            ] {
                let reply = try await PlainHTTP.form(token, form)
                #expect(reply.status == 400, "\(form): \(reply.text)")
                let problem = try reply.problem()
                #expect(problem.type == AuthProblemType.invalidRequest)
                #expect(problem.detail?.contains(field) == true, "\(problem)")
            }
            let config = try await PlainHTTP.send(
                "GET",
                URL(
                    string: server.url.absoluteString
                        + "/v1/config/client?app=scan&version=0.1.0%00"
                )!
            )
            #expect(config.status == 400)
            #expect(try config.problem().detail?.contains("'version'") == true)
            faults.fail(when: nil)
            let booked = try await FaultTests.count(client, "Nul")
            #expect(booked == 0, "nothing was booked")
        } catch {
            faults.fail(when: nil)
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "a request the HTTP parser rejects gets a problem document; a 413 with Connection: close really closes",
        arguments: DatabaseKind.allCases
    )
    func connectionEdges(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind)
        do {
            let port = server.url.port!
            let garbage = try RawSocket(port: port)
            try garbage.send("GET /health HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n")
            let rejected = await garbage.readUntilClosedOffPool()
            #expect(rejected.closed)
            #expect(rejected.text.hasPrefix("HTTP/1.1 400"), "\(rejected.text)")
            #expect(rejected.text.lowercased().contains("content-type: application/problem+json"))
            #expect(rejected.text.contains(ProblemType.badRequest))

            let large = try RawSocket(port: port)
            try large.send(
                "POST /v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10000000\r\n\r\ngrant_type="
            )
            let tooLarge = await large.readUntilClosedOffPool()
            #expect(tooLarge.closed, "the connection stays open after 413")
            #expect(tooLarge.text.hasPrefix("HTTP/1.1 413"), "\(tooLarge.text)")
            #expect(tooLarge.text.lowercased().contains("connection: close"))
            // The server still serves others.
            #expect(
                try await PlainHTTP.send("GET", server.url.appendingPathComponent("health")).status
                    == 200
            )
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// A 413 is answered as soon as `Content-Length` says the body is too large, while the
    /// client may still be sending it. Closed at once, the connection's unread bytes made the
    /// kernel reset it, and a client still writing its body (libcurl, so URLSession, between
    /// two 64 KiB writes) failed with "Send failure: Connection reset by peer" before it read
    /// the answer (seen under load in CI). Half-closed first (RFC 9112 § 9.6), the rest of the
    /// body is read and dropped, and the client reads the answer and an orderly close.
    @Test("a body over the limit gets its 413 while the client is still sending it")
    func oversizedBodyWhileSending() async throws {
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 64 * 1024)
        try await Self.answered(bodyLength: 8 * chunk.count, sendingFirst: chunk) { socket, url in
            // The rest of the body, as a client that writes it all before reading does.
            var sent = 1
            for _ in 1..<8 {
                guard socket.trySend(chunk) else { break }
                sent += 1
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(sent == 8, "the server reset the connection after \(sent) of 8 chunks")
            let (bytes, reset) = await socket.bytesUntilEndOffPool()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 413"), "\(text)")
            #expect(!reset, "the connection ended in a reset")
            #expect(
                try await PlainHTTP.send("GET", url.appendingPathComponent("health")).status == 200
            )
        }
    }

    /// The linger after a 413 is bounded: a client that never stops sending is cut off.
    @Test("a client that goes on sending after its 413 is cut off after the linger")
    func lingerIsBounded() async throws {
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 16 * 1024)
        try await Self.answered(bodyLength: 1_000_000_000) { socket, _ in
            let started = ContinuousClock.now
            var refused = false
            while ContinuousClock.now - started < .seconds(10) {
                if !socket.trySend(chunk) {
                    refused = true
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            let lasted = ContinuousClock.now - started
            #expect(refused, "still accepted after \(lasted)")
            #expect(lasted > .milliseconds(1_500), "cut off after \(lasted), before the linger")
            #expect(lasted < .seconds(5), "cut off after \(lasted)")
        }
    }

    /// On a fresh SQLite server: a raw connection that sends the head of a JSON request of
    /// `bodyLength` bytes to a signed route (and `first` of its body), waits for the answer
    /// to arrive, then runs `body` with the socket and the server's URL.
    static func answered(
        bodyLength: Int,
        sendingFirst first: Data = Data(),
        _ body: (RawSocket, URL) async throws -> Void
    ) async throws {
        let server = try await TestServer.start(.sqlite)
        do {
            let socket = try RawSocket(port: server.url.port!)
            try socket.send(
                "POST /v1/reservations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(bodyLength)\r\n\r\n"
            )
            try socket.send(first)
            #expect(socket.waitReadable(within: 10), "no answer to the head")
            try await body(socket, server.url)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "a client that stalls half-way through a body is cut off after the idle timeout, and a stop closes what is left after the drain timeout",
        arguments: DatabaseKind.allCases
    )
    func stalledBodies(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(
            kind,
            idleTimeout: .seconds(1),
            drainTimeout: .seconds(1)
        )
        let port = server.url.port!
        let head =
            "POST /v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 60\r\n\r\ngrant_type="
        let stalled = try RawSocket(port: port)
        try stalled.send(head)
        let cut = await stalled.readUntilClosedOffPool(within: 20)
        #expect(cut.closed, "the half-sent request is still open")

        // A stop with a stalled request in flight (idle timeout longer than the drain).
        await server.stop()
        let slow = try await TestServer.start(
            kind,
            location: server.location,
            idleTimeout: .seconds(60),
            drainTimeout: .seconds(1)
        )
        let held = try RawSocket(port: slow.url.port!)
        try held.send(head)
        #expect(
            try await PlainHTTP.send("GET", slow.url.appendingPathComponent("health")).status == 200
        )
        let stopping = Task { await slow.stop() }
        let closed = await held.readUntilClosedOffPool(within: 30)
        #expect(closed.closed, "the stop left the stalled connection open")
        await stopping.value
    }

    @Test("store-server exits 143 within its drain timeout while a client holds a half-sent body")
    func sigtermWithStalledClient() async throws {
        let location = try await TestDatabases.make(.sqlite)
        let server = try await ServerProcess(location: location, extra: ["--drain-timeout", "1"])
        let held = try RawSocket(port: server.url.port!)
        try held.send(
            "POST /v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 60\r\n\r\ngrant_type="
        )
        #expect(
            try await PlainHTTP.send("GET", server.url.appendingPathComponent("health")).status
                == 200
        )
        server.terminate()
        let closed = await held.readUntilClosedOffPool(within: 20)
        #expect(closed.closed)
        #expect(await server.stop() == 143)
    }
}
