import Auth
import ChildProcesses
import Foundation
import Logging
import Models
import StoreServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two real `store-server` processes on one PostgreSQL database, as behind a load balancer:
/// both see one host name, so a request signed for one is valid for the other.
@Suite("two store-server processes on one PostgreSQL", .serialized)
struct MultiInstanceTests {
    static func authority(_ url: URL) -> String { "\(url.host!):\(url.port!)" }

    @Test(
        "an instance opens its pool and runs a signed read's statements on each connection before it listens"
    )
    func poolOpenedAtStart() async throws {
        let location = try await TestDatabases.make(.postgres)
        guard case .postgres(let url) = location else { return }
        let name = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let server = try await ServerProcess(
            location: location,
            extra: ["--database-connections", "3"]
        )
        defer { server.terminate() }
        // No request yet: every backend of this database is the new instance's, each idle
        // after the last of the warm-up statements (a reservation by code).
        let cluster = try await PostgresCluster.get()
        let backends = try await cluster.value(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()",
            in: name
        )
        let warmed = try await cluster.value(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(name)' AND state = 'idle' AND query LIKE '%r.code = $1 AND ($2 OR r.store_id = ANY($3))%'",
            in: name
        )
        #expect((Int(backends) ?? 0) >= 3, "backends: \(backends)")
        #expect((Int(warmed) ?? 0) >= 2, "warmed: \(warmed) of \(backends)")
        // And it serves: the warm-up recorded no nonce a request could collide with.
        let client = try await SignedClient.signIn(
            server.url,
            username: DemoData.username,
            password: DemoData.password
        )
        #expect(try await client.send("GET", "/v1/me").status == 200)
        #expect(
            try await cluster.value("SELECT count(*) FROM auth_nonces WHERE key_id = ''", in: name)
                == "0"
        )
    }

    @Test("a signed request accepted by one instance is a replay on the other, and after a restart")
    func replayAcrossInstances() async throws {
        let location = try await TestDatabases.make(.postgres)
        let first = try await ServerProcess(location: location)
        let second = try await ServerProcess(location: location)
        defer {
            first.terminate()
            second.terminate()
        }
        let client = try await SignedClient.signIn(
            first.url,
            username: DemoData.username,
            password: DemoData.password
        )
        let host = Self.authority(first.url)
        let headers = try RawHTTP.signedHeaders(
            directory: client.directory,
            method: "GET",
            host: host,
            path: "/v1/me"
        )
        let accepted = try await RawHTTP.send(
            port: first.url.port!,
            method: "GET",
            path: "/v1/me",
            host: host,
            headers: headers
        )
        #expect(accepted.status == 200)
        let replayed = try await RawHTTP.send(
            port: second.url.port!,
            method: "GET",
            path: "/v1/me",
            host: host,
            headers: headers
        )
        #expect(replayed.refusesSignature, "\(replayed)")

        // A fresh signature for the same host is accepted by the second instance: the token
        // issued by the first works there.
        let fresh = try RawHTTP.signedHeaders(
            directory: client.directory,
            method: "GET",
            host: host,
            path: "/v1/me"
        )
        #expect(
            try await RawHTTP.send(
                port: second.url.port!,
                method: "GET",
                path: "/v1/me",
                host: host,
                headers: fresh
            ).status == 200
        )

        // A restarted instance still refuses the replay inside the window.
        #expect(await first.stop() == 143)
        let restarted = try await ServerProcess(location: location)
        defer { restarted.terminate() }
        let afterRestart = try await RawHTTP.send(
            port: restarted.url.port!,
            method: "GET",
            path: "/v1/me",
            host: host,
            headers: headers
        )
        #expect(afterRestart.refusesSignature, "\(afterRestart)")
    }

    @Test(
        "100 concurrent check-ins with one Idempotency-Key spread over both instances check in once"
    )
    func idempotencyAcrossInstances() async throws {
        let location = try await TestDatabases.make(.postgres)
        let first = try await ServerProcess(location: location)
        let second = try await ServerProcess(location: location)
        defer {
            first.terminate()
            second.terminate()
        }
        let signedIn = try await SignedClient.signIn(
            first.url,
            username: DemoData.adminUsername,
            password: DemoData.password
        )
        // A second client on the other instance with the same session: the token file copied
        // and addressed to that origin (Auth's client keeps credentials to their server).
        let copy = try TestDatabases.temporaryDirectory("tokens-2")
        var credentials = try #require(try TokenStore(directory: signedIn.directory).load())
        credentials.serverURL = second.url.absoluteString
        try TokenStore(directory: copy).save(credentials)
        let other = SignedClient(
            client: AuthClient(
                configuration: AuthClientConfiguration(
                    serverURL: second.url,
                    deadline: .seconds(60),
                    retry: .none
                ),
                store: TokenStore(directory: copy),
                logger: Logger(label: "test-client-2")
            ),
            directory: copy
        )
        let me: Associate = try await other.send("GET", "/v1/me").decode()
        #expect(me.username == DemoData.adminUsername)

        let reservation = try await firstReservation(signedIn, store: newYork)
        let path = "/v1/reservations/\(reservation.id.uuidString)/check-in"
        let key = "spread-\(UUID().uuidString)"
        let replies = try await withThrowingTaskGroup(of: HTTPReply.self) { group in
            for index in 0..<100 {
                let client = index.isMultiple(of: 2) ? signedIn : other
                group.addTask {
                    try await client.send("POST", path, headers: ["Idempotency-Key": key])
                }
            }
            var all: [HTTPReply] = []
            for try await reply in group { all.append(reply) }
            return all
        }
        #expect(replies.allSatisfy { $0.status == 200 }, "\(Set(replies.map(\.status)))")
        #expect(Set(replies.map(\.data)).count == 1)
        #expect(replies.filter { $0.header("idempotency-replayed") == nil }.count == 1)
        let after: ReservationDetail = try await other.send(
            "GET",
            "/v1/reservations/\(reservation.id.uuidString)"
        ).decode()
        #expect(after.reservation.status == .checkedIn)
        #expect(after.reservation.version == reservation.reservation.version + 1)
    }

    @Test("SIGINT drains and exits 130; the first stdout line names the port")
    func signals() async throws {
        let location = try await TestDatabases.make(.sqlite)
        let server = try await ServerProcess(location: location)
        #expect(server.url.host == "127.0.0.1" && (server.url.port ?? 0) > 0)
        let health: ServerHealth = try await PlainHTTP.send(
            "GET",
            server.url.appendingPathComponent("health")
        ).decode()
        #expect(health.status == "ok")
        #expect(await server.stop(SIGINT) == 130)
    }
}

/// The server process's lifecycle and logs.
@Suite("store-server process lifecycle and logs", .serialized)
struct LifecycleTests {
    @Test("SIGTERM lets a request in flight finish before the process exits 143")
    func drainsInFlight() async throws {
        let location = try await TestDatabases.make(.sqlite)
        let server = try await ServerProcess(location: location)
        let port = Int32(server.url.port!)
        // A sign-in whose body is only half sent: the handler is waiting for the rest.
        let socket = try RawSocket(port: Int(port))
        let form = "grant_type=password&username=demo&password=\(DemoData.password)"
        let head =
            "POST /v1/auth/token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n\r\n"
        let firstPart = head + form.prefix(10)
        try socket.send(String(firstPart))
        // Another request answered on another connection: the server has read the first one's head.
        #expect(
            try await PlainHTTP.send("GET", server.url.appendingPathComponent("health")).status
                == 200
        )
        server.child.signal(SIGTERM)
        let rest = String(form.dropFirst(10))
        try socket.send(rest)
        let text = await socket.readUntilClosedOffPool(within: 30).text
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.contains("access_token"))
        #expect(await server.stop() == 143)
    }

    @Test("logs name requests by id and never carry a password, token, signing key or signature")
    func logsWithoutSecrets() async throws {
        let location = try await TestDatabases.make(.sqlite)
        let server = try await ServerProcess(location: location, quiet: false)
        let client = try await SignedClient.signIn(
            server.url,
            username: DemoData.username,
            password: DemoData.password
        )
        _ = try await client.send("GET", "/v1/me", headers: ["X-Request-ID": "log-check-1"])
        _ = try await PlainHTTP.form(
            server.url.appendingPathComponent("v1/auth/token"),
            [
                ("grant_type", "password"), ("username", DemoData.username),
                ("password", "wrong-password-42"),
            ]
        )
        let credentials = try #require(try TokenStore(directory: client.directory).load())
        #expect(await server.stop() == 143)
        let log = await server.errors()
        // The suite's log handler writes `key: value` metadata.
        #expect(log.contains("request_id: log-check-1") || log.contains("request_id=log-check-1"))
        #expect(log.contains("path: /v1/me") || log.contains("path=/v1/me"))
        for secret in [
            DemoData.password, "wrong-password-42", credentials.accessToken,
            credentials.refreshToken,
            credentials.signingKey, "sig1=:",
        ] {
            #expect(!log.contains(secret), "the log holds a secret")
        }
    }
}

/// Auth's client against the real server: what it signs is checked, refreshed once.
///
/// One test at a time: `oneRefresh` and `oneRefreshAcrossProcesses` stop their server and
/// start it again on the port it had (`port: port`, `port: short.url.port!`: the session
/// belongs to that origin), with no second try; a server or connection that a sibling test
/// opens in between could take that port.
@Suite("Auth's client end to end against store-server", .serialized)
struct EndToEndTests {
    @Test(
        "tampered, replayed and skewed requests are rejected; a client with a skewed clock recovers",
        arguments: DatabaseKind.allCases
    )
    func rejections(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, client in
            let host = MultiInstanceTests.authority(server.url)
            let port = server.url.port!
            let body = Data(#"{"notes": "tamper"}"#.utf8)
            let reservation = try await firstReservation(client, store: newYork)
            let path = "/v1/reservations/\(reservation.id.uuidString)"
            let headers = try RawHTTP.signedHeaders(
                directory: client.directory,
                method: "PATCH",
                host: host,
                path: path,
                body: body,
                contentType: "application/json",
                ifMatch: "\"\(reservation.reservation.version)\""
            )
            let tampered = try await RawHTTP.send(
                port: port,
                method: "PATCH",
                path: path,
                host: host,
                headers: headers,
                body: Data(#"{"notes": "tampered"}"#.utf8)
            )
            #expect(tampered.status == 401)
            let otherPath = try await RawHTTP.send(
                port: port,
                method: "PATCH",
                path: path + "x",
                host: host,
                headers: headers,
                body: body
            )
            #expect(otherPath.status == 401)
            let good = try await RawHTTP.send(
                port: port,
                method: "PATCH",
                path: path,
                host: host,
                headers: headers,
                body: body
            )
            #expect(good.status == 200, "\(String(decoding: good.body, as: UTF8.self))")
            let replay = try await RawHTTP.send(
                port: port,
                method: "PATCH",
                path: path,
                host: host,
                headers: headers,
                body: body
            )
            #expect(replay.refusesSignature, "\(replay)")

            let old = try RawHTTP.signedHeaders(
                directory: client.directory,
                method: "GET",
                host: host,
                path: "/v1/me",
                created: Int64(Date().timeIntervalSince1970) - 400
            )
            let skewed = try await RawHTTP.send(
                port: port,
                method: "GET",
                path: "/v1/me",
                host: host,
                headers: old
            )
            #expect(skewed.status == 401)
            #expect(
                String(decoding: skewed.body, as: UTF8.self).contains(
                    AuthProblemType.signatureOutsideWindow
                )
            )
            let future = try RawHTTP.signedHeaders(
                directory: client.directory,
                method: "GET",
                host: host,
                path: "/v1/me",
                created: Int64(Date().timeIntervalSince1970) + 120
            )
            #expect(
                try await RawHTTP.send(
                    port: port,
                    method: "GET",
                    path: "/v1/me",
                    host: host,
                    headers: future
                ).status == 401
            )

            // A client whose clock is an hour off learns the skew from Date and succeeds.
            let directory = try TestDatabases.temporaryDirectory("skewed")
            let skewedClient = AuthClient(
                configuration: AuthClientConfiguration(
                    serverURL: server.url,
                    deadline: .seconds(30)
                ),
                store: TokenStore(directory: directory),
                clock: ShiftedClock(offset: -3600),
                logger: Logger(label: "skewed")
            )
            try await skewedClient.signIn(username: DemoData.username, password: DemoData.password)
            let (_, response) = try await skewedClient.send(
                URLRequest(url: skewedClient.url("/v1/me"))
            )
            #expect(response.statusCode == 200)
        }
    }

    @Test(
        "1,000 concurrent requests with an expired access token cause exactly one refresh",
        arguments: DatabaseKind.allCases
    )
    func oneRefresh(kind: DatabaseKind) async throws {
        // Sign in on a server that issues one-second access tokens, let the token expire, then
        // serve the same database and port with the normal lifetime: the refreshed token lasts.
        let short = try await TestServer.start(kind, accessTokenTTL: 1)
        let client = try await short.client()
        let port = short.url.port!
        await short.stop()
        // The server's clock must pass the token's one-second lifetime; there is no event to await.
        try await Task.sleep(for: .milliseconds(1_100))
        let server = try await TestServer.start(kind, location: short.location, port: port)
        do {
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<1000 {
                    group.addTask { try await client.send("GET", "/v1/me").status }
                }
                var all: [Int] = []
                for try await status in group { all.append(status) }
                return all
            }
            #expect(statuses.count == 1000 && statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
            let admin = try await StoreAdmin.open(
                server.location,
                passwordIterations: testPasswordCost,
                logger: TestDatabases.logger
            )
            let counts = try await admin.sessionCounts(DemoData.adminUsername)
            await admin.close()
            #expect(counts.refreshTokens == 2, "one from the sign-in, one from the single refresh")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("two client processes with one expired sign-in refresh exactly once between them")
    func oneRefreshAcrossProcesses() async throws {
        let location = try await TestDatabases.make(.postgres)
        let short = try await ServerProcess(location: location, extra: ["--access-token-ttl", "1"])
        let client = try await SignedClient.signIn(
            short.url,
            username: DemoData.username,
            password: DemoData.password
        )
        #expect(await short.stop() == 143)
        try await Task.sleep(for: .milliseconds(1_100))
        let server = try await ServerProcess(location: location, port: short.url.port!)
        defer { server.terminate() }
        let peer = ServerProcess.binary.deletingLastPathComponent().appendingPathComponent(
            "AuthPeer"
        )
        var peers: [ChildProcess] = []
        for _ in 0..<2 {
            peers.append(
                try await ChildProcess.start(
                    peer,
                    [server.url.absoluteString, client.directory.path, "/v1/me", "200"]
                )
            )
        }
        for process in peers {
            let outcome = await process.wait()
            #expect(outcome.status == 0, "\(outcome)")
            #expect(outcome.stdout.contains("ok 200"))
        }
        let admin = try await StoreAdmin.open(
            location,
            passwordIterations: testPasswordCost,
            logger: TestDatabases.logger
        )
        let counts = try await admin.sessionCounts(DemoData.username)
        await admin.close()
        #expect(counts.refreshTokens == 2)
    }
}

/// A wall clock shifted from the real one.
struct ShiftedClock: AuthClock {
    var offset: TimeInterval
    func now() -> Date { Date() + offset }
}
