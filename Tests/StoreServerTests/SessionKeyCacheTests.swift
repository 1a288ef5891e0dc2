import Auth
import Foundation
import Testing

@testable import StoreServer

/// Issue 29, point 1: once a token has passed the gate, its signing key is kept in the
/// process, and the request's nonce, token, session and access are one statement on
/// PostgreSQL; whatever can change is still read for every request.
@Suite("signed requests with a known token's key")
struct SessionKeyCacheTests {
    /// A raw signed GET of `path` with the credentials in `directory`.
    static func get(_ server: TestServer, _ path: String, directory: URL) async throws
        -> RawHTTP.Reply
    {
        try await send(server, path, headers: signed(server, path, directory: directory))
    }

    /// The headers of a GET of `path` signed with the credentials in `directory`.
    static func signed(_ server: TestServer, _ path: String, directory: URL) throws
        -> [(String, String)]
    {
        try RawHTTP.signedHeaders(
            directory: directory,
            method: "GET",
            host: "\(server.url.host!):\(server.url.port!)",
            path: path
        )
    }

    /// A raw GET of `path` with `headers`.
    static func send(_ server: TestServer, _ path: String, headers: [(String, String)])
        async throws -> RawHTTP.Reply
    {
        try await RawHTTP.send(
            port: server.url.port!,
            method: "GET",
            path: path,
            host: "\(server.url.host!):\(server.url.port!)",
            headers: headers
        )
    }

    @Test("after a token's first request, one statement records the nonce and reads the rest")
    func oneStatement() async throws {
        let faults = InjectedFaults()
        let server = try await TestServer.start(.postgres, faults: faults)
        defer { Task { await server.stop() } }
        let known = try await server.client()
        let fresh = try await server.client(username: DemoData.username)
        #expect(try await Self.get(server, "/v1/me", directory: known.directory).status == 200)
        // The two statements a token's first request runs (the token with its session and
        // access; the nonce alone) now fail as if the database could not be reached.
        faults.fail { sql in
            sql.contains("FROM auth_tokens t")
                || (sql.contains("INSERT INTO auth_nonces") && !sql.contains("auth_tokens"))
        }
        for _ in 0..<3 {
            let me = try await Self.get(server, "/v1/me", directory: known.directory)
            #expect(me.status == 200, "\(me)")
            #expect(String(decoding: me.body, as: UTF8.self).contains(DemoData.adminUsername))
        }
        let first = try await Self.get(server, "/v1/me", directory: fresh.directory)
        #expect(first.status == 503, "a new token's first request needs them")
        faults.fail(when: nil)
        #expect(try await Self.get(server, "/v1/me", directory: fresh.directory).status == 200)
    }

    @Test(
        "a revoked session is refused at the next request, though its key is known",
        arguments: DatabaseKind.allCases
    )
    func revoked(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind)
        defer { Task { await server.stop() } }
        let client = try await server.client(username: DemoData.username)
        #expect(try await Self.get(server, "/v1/me", directory: client.directory).status == 200)
        #expect(try await Self.get(server, "/v1/me", directory: client.directory).status == 200)
        // A copy of the credentials outlives the client's sign-out.
        let copy = try TestDatabases.temporaryDirectory("tokens-copy")
        for name in try FileManager.default.contentsOfDirectory(atPath: client.directory.path) {
            try FileManager.default.copyItem(
                at: client.directory.appendingPathComponent(name),
                to: copy.appendingPathComponent(name)
            )
        }
        try await client.client.logout()
        let refused = try await Self.get(server, "/v1/me", directory: copy)
        #expect(refused.status == 401, "\(refused)")
        #expect(refused.headers["www-authenticate"] == "Bearer")
        #expect(
            String(decoding: refused.body, as: UTF8.self).contains(AuthProblemType.invalidToken)
        )
    }

    @Test("a replay is refused with a known key", arguments: DatabaseKind.allCases)
    func replay(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind)
        defer { Task { await server.stop() } }
        let client = try await server.client(username: DemoData.username)
        #expect(try await Self.get(server, "/v1/me", directory: client.directory).status == 200)
        let headers = try Self.signed(server, "/v1/me", directory: client.directory)
        for expected in [true, false] {
            let reply = try await Self.send(server, "/v1/me", headers: headers)
            #expect(reply.status == 200 || reply.refusesSignature, "\(reply)")
            #expect((reply.status == 200) == expected, "\(reply)")
        }
    }

    @Test("the cache holds at most its capacity and forgets expired tokens")
    func bounded() throws {
        let cache = SessionKeyCache(capacity: 3)
        let now = Date()
        func session(_ id: Int, expires: Date) throws -> AuthSession {
            AuthSession(
                id: "s\(id)",
                subject: "u\(id)",
                signingKey: try SigningKey(id: "k\(id)", secret: Data(repeating: 1, count: 32)),
                accessTokenExpiresAt: expires
            )
        }
        for id in 0..<3 {
            cache.remember(try session(id, expires: now + 60), digest: "d\(id)")
        }
        #expect(cache.count == 3)
        #expect(cache.session(digest: "d1", now: now)?.id == "s1")
        #expect(cache.session(digest: "d1", now: now + 61) == nil)
        #expect(cache.count == 2)
        cache.remember(try session(3, expires: now + 60), digest: "d3")
        cache.remember(try session(4, expires: now + 60), digest: "d4")
        #expect(cache.count <= 3)
        #expect(cache.session(digest: "d4", now: now)?.subject == "u4")
        cache.forget(digest: "d4")
        #expect(cache.session(digest: "d4", now: now) == nil)
    }
}
