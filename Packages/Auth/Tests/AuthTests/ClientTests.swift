import ChildProcesses
import Foundation
import Logging
import Testing

@testable import Auth

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Signs in against the test server.
func signIn(_ client: AuthClient) async throws {
    try await client.signIn(username: TestServer.username, password: TestServer.password)
}

/// Rewrites the token file so the client believes the access token expires at `date`.
func setExpiry(_ directory: URL, _ date: Date) throws {
    let store = TokenStore(directory: directory)
    var credentials = try #require(try store.load())
    credentials.expiresAt = date
    try store.save(credentials)
}

func get(_ client: AuthClient, _ path: String, deadline: Duration? = nil) async throws(AuthError)
    -> (Data, HTTPURLResponse)
{
    try await client.send(URLRequest(url: client.url(path)), deadline: deadline)
}

func elapsed(since start: ContinuousClock.Instant) -> Double {
    (ContinuousClock.now - start).timeInterval
}

/// One test at a time: several tests time deadlines, retries and cancellation to a fraction of
/// a second (`elapsed(since: start) < 0.8`, `< 1.5`, `< 2.5`), while `singleFlightRefresh`
/// sends 1,000 requests at once and `crossProcessRefresh` runs two `AuthPeer` processes: side
/// by side, that load would be in the measured times.
@Suite("Auth client and server pieces on real sockets", .serialized)
struct ClientTests {
    @Test("signed GET and POST requests pass the verifier; the token file is 0600")
    func signedRequests() async throws {
        let server = try TestServer()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            let client = makeClient(base, directory)
            let result = try await client.signIn(
                username: TestServer.username,
                password: TestServer.password
            )
            #expect(result.username == TestServer.username)
            let (data, response) = try await get(client, "/v1/echo")
            #expect(response.statusCode == 200)
            #expect(String(decoding: data, as: UTF8.self) == "{\"subject\":\"ana\"}")
            var post = URLRequest(url: client.url("/v1/echo?x=1"))
            post.httpMethod = "POST"
            post.httpBody = Data("hello, world".utf8)
            let (body, postResponse) = try await client.send(post)
            #expect(postResponse.statusCode == 200)
            #expect(String(decoding: body, as: UTF8.self) == "{\"bytes\":12}")
            let attributes = try FileManager.default.attributesOfItem(
                atPath: TokenStore(directory: directory).fileURL.path
            )
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
        #expect(server.rejections.isEmpty)
    }

    @Test("wrong passwords are refused with invalidCredentials and nothing is stored")
    func wrongPassword() async throws {
        let server = try TestServer()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            let client = makeClient(base, directory)
            let error = await #expect(throws: AuthError.self) {
                try await client.signIn(
                    username: TestServer.username,
                    password: "wrong-password-123"
                )
            }
            #expect(error?.code == .invalidCredentials)
            #expect(error?.description.contains("wrong-password-123") == false)
            #expect(!client.isSignedIn)
            let missing = await #expect(throws: AuthError.self) {
                try await get(client, "/v1/echo")
            }
            #expect(missing?.code == .signInRequired)
        }
    }

    enum Tamper: String, CaseIterable, Sendable {
        case body, path, replay, expired, future, unsigned, wrongAlgorithm
    }

    @Test(
        "tampered, replayed, expired and unsigned requests get 401 problem+json",
        arguments: Tamper.allCases
    )
    func tampered(_ tamper: Tamper) async throws {
        let server = try TestServer()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            try await signIn(makeClient(base, directory))
            let credentials = try #require(try TokenStore(directory: directory).load())
            let signer = RequestSigner(key: try credentials.makeSigningKey())
            let transport = URLSessionHTTPTransport(configuration: .ephemeral)
            let url = base.appendingPathComponent("v1/echo")
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.httpBody = Data("amount=10".utf8)
            request.setValue(
                "application/x-www-form-urlencoded",
                forHTTPHeaderField: "Content-Type"
            )
            request.setValue(
                "Bearer " + credentials.accessToken,
                forHTTPHeaderField: "Authorization"
            )
            let now = Int64(Date().timeIntervalSince1970)
            let expectedReason: String
            var expectedType = AuthProblemType.invalidSignature
            switch tamper {
            case .body:
                signer.sign(&request, created: now)
                request.httpBody = Data("amount=99".utf8)
                expectedReason = "digestMismatch"
            case .path:
                request.url = base.appendingPathComponent("v1/busy")
                signer.sign(&request, created: now)
                request.url = url
                expectedReason = "badSignature"
            case .replay:
                signer.sign(&request, created: now)
                let (_, first) = try await rawSend(transport, request)
                #expect(first.statusCode == 200)
                expectedReason = "replayedNonce"
            case .expired:
                signer.sign(&request, created: now - 400)
                expectedReason = "expired"
                expectedType = AuthProblemType.signatureOutsideWindow
            case .future:
                signer.sign(&request, created: now + 400)
                expectedReason = "createdInFuture"
                expectedType = AuthProblemType.signatureOutsideWindow
            case .unsigned:
                expectedReason = "missingSignature"
            case .wrongAlgorithm:
                signer.sign(&request, created: now)
                let input = try #require(request.value(forHTTPHeaderField: "Signature-Input"))
                request.setValue(
                    input.replacingOccurrences(of: "hmac-sha256", with: "hmac-sha512"),
                    forHTTPHeaderField: "Signature-Input"
                )
                expectedReason = "unsupportedAlgorithm"
            }
            let (data, response) = try await rawSend(transport, request)
            #expect(response.statusCode == 401)
            #expect(AuthClient.header("Content-Type", in: response) == "application/problem+json")
            let problem = try JSONDecoder().decode(ProblemDetails.self, from: data)
            #expect(problem.type == expectedType)
            #expect(problem.status == 401)
            #expect(server.rejections == [expectedReason])
        }
    }

    @Test(
        "a client clock off by an hour is corrected from the server's Date header",
        arguments: [3600.0, -3600.0]
    )
    func clockSkew(offset: TimeInterval) async throws {
        let server = try TestServer(accessTokenLifetime: 3 * 3600)
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            try await signIn(makeClient(base, directory))
            let skewed = makeClient(base, directory, clock: ShiftedClock(offset: offset))
            let (_, response) = try await get(skewed, "/v1/echo")
            #expect(response.statusCode == 200)
            #expect(abs(skewed.clockSkew + offset) < 2)
            // The first signature was refused once; the retry and later calls use the skew.
            #expect(server.rejections == [offset > 0 ? "createdInFuture" : "expired"])
            let (_, again) = try await get(skewed, "/v1/echo")
            #expect(again.statusCode == 200)
            #expect(server.rejections.count == 1)
            // A client that signs in with a skewed clock learns the skew from the token answer.
            let fresh = try temporaryContainer()
            defer { try? FileManager.default.removeItem(at: fresh) }
            let signedIn = makeClient(base, fresh, clock: ShiftedClock(offset: offset))
            try await signIn(signedIn)
            #expect(abs(signedIn.clockSkew + offset) < 2)
            #expect(try await get(signedIn, "/v1/echo").1.statusCode == 200)
            #expect(server.rejections.count == 1)
        }
    }

    @Test("1,000 concurrent requests with an expired token make exactly one refresh")
    func singleFlightRefresh() async throws {
        let server = try TestServer()
        server.knobs.withLock { $0.refreshDelay = .milliseconds(200) }
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            try await signIn(makeClient(base, directory))
            try setExpiry(directory, Date() - 10)
            let client = makeClient(base, directory, deadline: .seconds(60))
            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<1_000 {
                    group.addTask { (try? await get(client, "/v1/echo").1.statusCode) ?? -1 }
                }
                var all: [Int] = []
                for await status in group { all.append(status) }
                return all
            }
            #expect(statuses.count == 1_000)
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(server.refreshCount == 1)
        }
    }

    @Test("concurrent 401s for a token the server expired make exactly one refresh")
    func refreshOn401() async throws {
        let server = try TestServer()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            try await signIn(makeClient(base, directory))
            // The server's clock has passed the token; the client still believes it valid.
            let stale = try #require(try TokenStore(directory: directory).load()).accessToken
            server.knobs.withLock { _ = $0.expiredTokens.insert(stale) }
            let client = makeClient(base, directory)
            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<100 {
                    group.addTask { (try? await get(client, "/v1/echo").1.statusCode) ?? -1 }
                }
                var all: [Int] = []
                for await status in group { all.append(status) }
                return all
            }
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(server.refreshCount == 1)
            #expect(server.rejections.allSatisfy { $0 == "token:expired" })
        }
    }

    @Test("two processes with an expired token share one refresh through the lease")
    func crossProcessRefresh() async throws {
        let server = try TestServer()
        server.knobs.withLock { $0.refreshDelay = .milliseconds(300) }
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            try await signIn(makeClient(base, directory))
            try setExpiry(directory, Date() - 10)
            async let first = runPeer(base, directory, count: 50)
            async let second = runPeer(base, directory, count: 50)
            let outcomes = try await [first, second]
            for outcome in outcomes {
                #expect(outcome.status == 0)
                #expect(outcome.output == "ok 50\n")
            }
            #expect(server.refreshCount == 1)
        }
    }

    @Test("a lease left by a stopped or dead holder delays a refresh only until it expires")
    func staleLease() async throws {
        let server = try TestServer()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            try await signIn(makeClient(base, directory))
            try setExpiry(directory, Date() - 10)
            let expiry = Int64((Date().timeIntervalSince1970 + 1.5) * 1000)
            try Data("4194304-stopped \(expiry)\n".utf8).write(
                to: directory.appendingPathComponent("auth-refresh.lease")
            )
            let start = ContinuousClock.now
            let (_, response) = try await get(makeClient(base, directory), "/v1/echo")
            #expect(response.statusCode == 200)
            #expect(elapsed(since: start) >= 1.0)
            #expect(elapsed(since: start) < 6)
            #expect(server.refreshCount == 1)
            #expect(
                !FileManager.default.fileExists(
                    atPath: directory.appendingPathComponent("auth-refresh.lease").path
                )
            )
        }
    }

    @Test("a refused refresh token means signInRequired at once")
    func refusedRefreshToken() async throws {
        let server = try TestServer()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            try await signIn(makeClient(base, directory))
            let credentials = try #require(try TokenStore(directory: directory).load())
            try await server.issuer.revoke(token: credentials.refreshToken)
            try setExpiry(directory, Date() - 10)
            let client = makeClient(base, directory)
            let error = await #expect(throws: AuthError.self) { try await get(client, "/v1/echo") }
            #expect(error?.code == .signInRequired)
            #expect(server.refreshCount == 1)
            // Later calls fail the same way without asking the server again.
            let again = await #expect(throws: AuthError.self) { try await get(client, "/v1/echo") }
            #expect(again?.code == .signInRequired)
            #expect(server.refreshCount == 1)
        }
    }

    @Test(
        "Retry-After in seconds or as an HTTP date is honoured",
        arguments: [(503, "seconds"), (429, "date")]
    )
    func retryAfter(status: Int, form: String) async throws {
        let server = try TestServer()
        try await server.withClient { client async throws in
            let start = ContinuousClock.now
            let (_, response) = try await get(
                client,
                "/v1/busy?key=\(form)&fail=1&status=\(status)&after=\(form)"
            )
            #expect(response.statusCode == 200)
            #expect(elapsed(since: start) >= 0.95)
            #expect(server.hits(form) == 2)
        }
    }

    @Test("a POST is retried only with an Idempotency-Key")
    func postRetries() async throws {
        let server = try TestServer()
        try await server.withClient { client async throws in
            var plain = URLRequest(url: client.url("/v1/busy?key=plain&fail=1"))
            plain.httpMethod = "POST"
            plain.httpBody = Data("{}".utf8)
            #expect(try await client.send(plain).1.statusCode == 503)
            #expect(server.hits("plain") == 1)
            var keyed = URLRequest(url: client.url("/v1/busy?key=keyed&fail=1"))
            keyed.httpMethod = "POST"
            keyed.httpBody = Data("{}".utf8)
            keyed.setValue("7c1d5e0a-order-42", forHTTPHeaderField: "Idempotency-Key")
            #expect(try await client.send(keyed).1.statusCode == 200)
            #expect(server.hits("keyed") == 2)
        }
    }

    @Test("a Retry-After beyond the deadline returns the answer at once instead of waiting")
    func retryAfterBeyondDeadline() async throws {
        let server = try TestServer()
        let late: @Sendable (URL, URL) -> AuthClient = {
            makeClient($0, $1, deadline: .milliseconds(800))
        }
        try await server.withClient(making: late) { client async throws in
            let start = ContinuousClock.now
            let (_, response) = try await get(client, "/v1/busy?key=late&fail=5")
            #expect(response.statusCode == 503)
            #expect(elapsed(since: start) < 0.8)
        }
    }

    @Test("a call to a stalled server ends within its deadline")
    func stalledServer() async throws {
        let server = try TestServer()
        try await server.withClient { client async throws in
            let start = ContinuousClock.now
            let error = await #expect(throws: AuthError.self) {
                try await get(client, "/v1/stall", deadline: .milliseconds(1_500))
            }
            #expect(error?.code == .deadlineExceeded)
            #expect(elapsed(since: start) < 2.5)
        }
    }

    @Test("cancelling the calling task ends the call promptly")
    func cancellation() async throws {
        let server = try TestServer()
        try await server.withClient { client async throws in
            let start = ContinuousClock.now
            let task = Task { () throws(AuthError) -> Int in
                try await get(client, "/v1/stall").1.statusCode
            }
            await server.stallEntered.wait()  // the request is at the server
            task.cancel()
            let result = await task.result
            #expect(throws: AuthError.self) { try result.get() }
            if case .failure(let error) = result {
                #expect((error as? AuthError)?.code == .cancelled)
            }
            #expect(elapsed(since: start) < 1.5)
        }
    }

    @Test(
        "a redirect to another origin is refused with nothing sent there; a same-origin one is re-signed",
        arguments: [("GET", 302), ("GET", 307), ("POST", 307), ("POST", 308)]
    )
    func redirects(method: String, status: Int) async throws {
        let server = try TestServer()
        let inspector = Inspector()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await inspector.run { other in
            try await server.run { base in
                let client = makeClient(base, directory)
                try await signIn(client)
                func request(to target: String) -> URLRequest {
                    let encoded = target.addingPercentEncoding(
                        withAllowedCharacters: .alphanumerics
                    )!
                    var request = URLRequest(
                        url: client.url("/v1/redirect?status=\(status)&to=\(encoded)")
                    )
                    request.httpMethod = method
                    if method == "POST" {
                        request.httpBody = Data("{\"amount\":10}".utf8)
                        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                    }
                    return request
                }
                let away = other.appendingPathComponent("v1/echo").absoluteString
                let error = await #expect(throws: AuthError.self) {
                    try await client.send(request(to: away))
                }
                #expect(error?.code == .originMismatch)
                #expect(error?.status == status)
                #expect(inspector.seen.isEmpty)

                let (echo, sameOrigin) = try await client.send(request(to: "/v1/echo"))
                #expect(sameOrigin.statusCode == 200)
                // 307/308 keep the method and body; the new target is signed again.
                let expected = method == "POST" ? "{\"bytes\":13}" : "{\"subject\":\"ana\"}"
                #expect(String(decoding: echo, as: UTF8.self) == expected)
                #expect(server.rejections.isEmpty)
            }
        }
    }

    @Test("logout revokes the session on the server and signs out every app")
    func logout() async throws {
        let server = try TestServer()
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.run { base in
            let first = makeClient(base, directory)
            let second = makeClient(base, directory)
            try await signIn(first)
            #expect(try await get(second, "/v1/echo").1.statusCode == 200)
            let credentials = try #require(try TokenStore(directory: directory).load())
            try await first.logout()
            #expect(
                !FileManager.default.fileExists(
                    atPath: TokenStore(directory: directory).fileURL.path
                )
            )
            await #expect(throws: TokenRejection.self) {
                try await server.issuer.authenticate(accessToken: credentials.accessToken)
            }
            let error = await #expect(throws: AuthError.self) { try await get(second, "/v1/echo") }
            #expect(error?.code == .signInRequired)
        }
    }

    @Test("no password, token, key or signature appears in any log line or error")
    func logsFreeOfSecrets() async throws {
        let capture = LogCapture()
        let server = try TestServer(logger: capture.logger)
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (secrets, errorTexts): ([String], [String]) = try await server.run { base in
            let client = makeClient(base, directory, logger: capture.logger)
            var secrets = [TestServer.password, "wrong-password-123"]
            var errorTexts: [String] = []
            let refused = await #expect(throws: AuthError.self) {
                try await client.signIn(
                    username: TestServer.username,
                    password: "wrong-password-123"
                )
            }
            errorTexts.append(refused.map { "\($0)" } ?? "")
            try await signIn(client)
            let first = try #require(try TokenStore(directory: directory).load())
            secrets += [first.accessToken, first.refreshToken, first.signingKey]
            #expect(!"\(first)".contains(first.accessToken))
            _ = try await get(client, "/v1/echo")
            try setExpiry(directory, Date() - 10)
            _ = try await get(client, "/v1/echo")  // refresh
            let second = try #require(try TokenStore(directory: directory).load())
            secrets += [second.accessToken, second.refreshToken]
            // A tampered request makes the server log a rejection.
            var request = URLRequest(url: client.url("/v1/echo"))
            request.setValue("Bearer " + second.accessToken, forHTTPHeaderField: "Authorization")
            request.setValue(
                "sig1=(\"@method\" \"@target-uri\" \"content-digest\");created=1;keyid=\"x\";nonce=\"n\";alg=\"hmac-sha256\"",
                forHTTPHeaderField: "Signature-Input"
            )
            request.setValue("sig1=:AAAA:", forHTTPHeaderField: "Signature")
            _ = try await rawSend(URLSessionHTTPTransport(configuration: .ephemeral), request)
            let stall = await #expect(throws: AuthError.self) {
                try await get(client, "/v1/stall", deadline: .milliseconds(300))
            }
            errorTexts.append(stall.map { "\($0)" } ?? "")
            try await client.logout()
            return (secrets, errorTexts)
        }
        let lines = capture.lines
        #expect(lines.count > 5)
        #expect(lines.contains { $0.contains("signature rejected") })
        for line in lines {
            #expect(!line.contains("sig1=:"))
            for secret in secrets {
                #expect(!line.contains(secret), "log line leaks a secret: \(line)")
            }
        }
        // Error messages are checked too: none contains a password or token.
        #expect(errorTexts.count == 2)
        for message in errorTexts {
            for secret in secrets { #expect(!message.contains(secret)) }
        }
    }
}

/// Runs the AuthPeer executable (built next to the test bundle) and waits for it.
func runPeer(_ base: URL, _ directory: URL, count: Int) async throws -> (
    status: Int32, output: String
) {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("AuthPeer")
    let outcome = try await ChildProcess.run(
        executable,
        [base.absoluteString, directory.path, "/v1/echo", "\(count)"],
        stderr: .inherited
    )
    return (outcome.status, outcome.stdout)
}
