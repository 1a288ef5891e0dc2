import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

@testable import Auth

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A small store-server stand-in on a real socket: the token endpoint, revocation, and
/// signed routes checked with `TokenIssuer` and `SignatureVerifier`.
final class TestServer: Sendable {
    /// Decides a refresh request before the issuer sees it: a response to answer instead,
    /// or `nil` to go on normally. Gets the refresh token and the hit number (1-based).
    typealias RefreshHook = @Sendable (_ token: String, _ hit: Int) async throws -> Response?
    /// Answers the `hit`th password grant instead of the server when it returns a response.
    typealias SignInHook = @Sendable (_ hit: Int) async throws -> Response?

    struct Knobs {
        var refreshDelay: Duration = .zero
        var refreshHook: RefreshHook?
        var signInHook: SignInHook?
        var signInCount = 0
        var refreshCount = 0
        var tokenRequests = 0
        var hits: [String: Int] = [:]
        var rejections: [String] = []
        /// Access tokens this server treats as expired (as if its clock had passed them).
        var expiredTokens: Set<String> = []
    }

    static let username = "ana"
    static let password = "p4ss w0rd+secret"

    let issuer: TokenIssuer
    let verifier: SignatureVerifier
    let passwordHash: String
    let hasher = PasswordHasher.insecureForTesting(iterations: 1_000)
    let knobs = Mutex(Knobs())
    /// `/v1/stall` answers only once this opens (when `run`'s body has returned).
    let stallGate = Gate()
    /// Opens when a request reaches `/v1/stall` (past the auth checks).
    let stallEntered = Gate()
    let logger: Logger

    init(
        accessTokenLifetime: TimeInterval = 900,
        rotationGrace: TimeInterval = 30,
        logger: Logger = Logger(label: "test-server")
    ) throws {
        self.logger = logger
        issuer = TokenIssuer(
            accessTokenLifetime: accessTokenLifetime,
            rotationGrace: rotationGrace,
            logger: logger
        )
        verifier = SignatureVerifier(logger: logger)
        passwordHash = try hasher.hash(Self.password)
    }

    /// Sets the refresh hook.
    func onRefresh(_ hook: @escaping RefreshHook) { knobs.withLock { $0.refreshHook = hook } }

    /// Sets the password grant's hook.
    func onSignIn(_ hook: @escaping SignInHook) { knobs.withLock { $0.signInHook = hook } }

    /// Password grants that reached the token endpoint.
    var signInCount: Int { knobs.withLock { $0.signInCount } }

    var refreshCount: Int { knobs.withLock { $0.refreshCount } }
    /// Requests that reached the token endpoint.
    var tokenRequests: Int { knobs.withLock { $0.tokenRequests } }
    func hits(_ key: String) -> Int { knobs.withLock { $0.hits[key, default: 0] } }
    var rejections: [String] { knobs.withLock { $0.rejections } }

    /// Runs the server on `host` and `port` (0: any free port) and calls `body` with its
    /// base URL.
    func run<T: Sendable>(
        host: String = "127.0.0.1",
        port: Int = 0,
        _ body: @Sendable (URL) async throws -> T
    ) async throws -> T {
        defer { stallGate.open() }
        return try await serve(makeRouter(), host: host, port: port, logger: logger) { url in
            defer { stallGate.open() }
            return try await body(url)
        }
    }

    private func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/v1/auth/token") { [self] request, _ -> Response in
            knobs.withLock { $0.tokenRequests += 1 }
            let body = Array(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
            let grant: TokenGrant
            do {
                grant = try TokenGrant.parse(formBody: body)
            } catch {
                return problem(
                    ProblemDetails(
                        type: AuthProblemType.invalidRequest,
                        title: "Bad token request",
                        status: 400,
                        detail: (error as? AuthError)?.message
                    )
                )
            }
            switch grant {
            case .password(let user, let password):
                let (hook, hit) = knobs.withLock { knobs in
                    knobs.signInCount += 1
                    return (knobs.signInHook, knobs.signInCount)
                }
                if let hook, let answer = try await hook(hit) { return answer }
                // An unknown user costs the same PBKDF2 work as a known one.
                let stored = user == Self.username ? passwordHash : nil
                guard try hasher.verifyOrDummy(password, against: stored) else {
                    return problem(
                        ProblemDetails(
                            type: AuthProblemType.invalidCredentials,
                            title: "Wrong user name or password",
                            status: 401
                        )
                    )
                }
                return await tokenAnswer { () async throws(TokenRejection) in
                    try await issuer.issue(subject: user)
                }
            case .refreshToken(let token):
                let (delay, hook, hit) = knobs.withLock { knobs in
                    knobs.refreshCount += 1
                    return (knobs.refreshDelay, knobs.refreshHook, knobs.refreshCount)
                }
                try await Task.sleep(for: delay)
                if let hook, let answer = try await hook(token, hit) { return answer }
                return await tokenAnswer { () async throws(TokenRejection) in
                    try await issuer.refresh(refreshToken: token)
                }
            }
        }
        router.post("/v1/auth/revoke") { [self] request, _ -> Response in
            let body = Array(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
            if let token = FormEncoding.decode(body)["token"] {
                do throws(TokenRejection) {
                    try await issuer.revoke(token: token)
                } catch {
                    return problem(error.problem)
                }
            }
            return json(200, Data("{}".utf8))
        }
        router.get("/v1/echo") { [self] request, _ -> Response in
            try await guarded(request) { session, _ in
                json(200, Data("{\"subject\":\"\(session.subject)\"}".utf8))
            }
        }
        router.post("/v1/echo") { [self] request, _ -> Response in
            try await guarded(request) { _, body in
                json(200, Data("{\"bytes\":\(body.count)}".utf8))
            }
        }
        router.post("/v1/busy") { [self] request, _ -> Response in try await busy(request) }
        router.get("/v1/busy") { [self] request, _ -> Response in try await busy(request) }
        router.get("/v1/stall") { [self] request, _ -> Response in
            try await guarded(request) { _, _ in
                stallEntered.open()
                await stallGate.wait()  // opened when the test's body has finished
                return json(200, Data("{}".utf8))
            }
        }
        // `?to=URL&status=302|307|308`: a redirect (after the request passed the checks).
        for method in [HTTPRequest.Method.get, .post] {
            router.on("/v1/redirect", method: method) { [self] request, _ -> Response in
                try await guarded(request) { _, _ in
                    let query = request.uri.queryParameters
                    let target = query.get("to") ?? "/v1/echo"
                    let status = Int(query.get("status") ?? "302") ?? 302
                    return Response(status: .init(code: status), headers: [.location: target])
                }
            }
        }
        // A body of `?bytes=N` bytes (signed GET).
        router.get("/v1/large") { [self] request, _ -> Response in
            try await guarded(request) { _, _ in
                let count = Int(request.uri.queryParameters.get("bytes") ?? "0") ?? 0
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/octet-stream"],
                    body: .init(byteBuffer: ByteBuffer(repeating: UInt8(ascii: "x"), count: count))
                )
            }
        }
        return router
    }

    /// `?key=K&fail=N&status=503&after=seconds|date`: the first N hits of key K answer
    /// `status` with `Retry-After: 1` (seconds, or an HTTP date 2 s ahead), then 200.
    private func busy(_ request: Request) async throws -> Response {
        try await guarded(request) { _, _ in
            let query = request.uri.queryParameters
            let key = query.get("key") ?? "busy"
            let failures = Int(query.get("fail") ?? "1") ?? 1
            let status = Int(query.get("status") ?? "503") ?? 503
            let hit = knobs.withLock { knobs in
                knobs.hits[key, default: 0] += 1
                return knobs.hits[key]!
            }
            guard hit <= failures else { return json(200, Data("{\"hit\":\(hit)}".utf8)) }
            let retryAfter = query.get("after") == "date" ? HTTPDate.format(Date() + 2) : "1"
            return Response(status: .init(code: status), headers: [.retryAfter: retryAfter])
        }
    }

    /// Bearer token and signature checks, as store-server will do them.
    private func guarded(
        _ request: Request,
        _ body: (AuthSession, [UInt8]) async throws -> Response
    ) async throws -> Response {
        let bytes = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
        let session: AuthSession
        let authorization = Self.header("authorization", request)
        let expired = knobs.withLock { knobs in
            authorization.map { knobs.expiredTokens.contains(String($0.dropFirst(7))) } ?? false
        }
        if expired {
            knobs.withLock { $0.rejections.append("token:expired") }
            return problem(TokenRejection(reason: .expired).problem)
        }
        do {
            session = try await issuer.authenticate(authorization: authorization)
        } catch {
            knobs.withLock { $0.rejections.append("token:\(error.reason.rawValue)") }
            return problem(error.problem)
        }
        let target = "http://\(request.head.authority ?? "?")\(request.uri.string)"
        do {
            _ = try await verifier.verify(
                method: request.method.rawValue,
                targetURI: target,
                headers: SignedRequestHeaders { Self.header($0, request) },
                body: bytes,
                key: session.signingKey
            )
        } catch {
            knobs.withLock { $0.rejections.append(error.reason.rawValue) }
            return problem(error.problem)
        }
        return try await body(session, bytes)
    }

    /// The token endpoint's answer: the token JSON, or the rejection's grant problem.
    private func tokenAnswer(_ make: () async throws(TokenRejection) -> TokenResponse) async
        -> Response
    {
        do {
            return json(200, try await make().jsonData())
        } catch {
            return problem(error.grantProblem)
        }
    }

    static func header(_ name: String, _ request: Request) -> String? {
        request.headers.first { $0.name.canonicalName == name }?.value
    }
}

/// Runs a Hummingbird server for `router` on 127.0.0.1, port 0, and calls `body` with its
/// base URL once it listens (the port comes from `onServerRunning`); the server stops when
/// `body` returns or throws.
func serve<T: Sendable>(
    _ router: Router<BasicRequestContext>,
    host: String = "127.0.0.1",
    port: Int = 0,
    logger: Logger,
    _ body: @Sendable (URL) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port)),
        onServerRunning: { channel in
            continuation.yield(channel.localAddress?.port ?? 0)
            continuation.finish()
        },
        logger: logger
    )
    let services = ServiceGroup(
        configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger)
    )
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await services.run()
            return nil
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await services.triggerGracefulShutdown()
            throw CancellationError()
        }
        do {
            let result = try await body(URL(string: "http://\(host):\(port)")!)
            await services.triggerGracefulShutdown()
            return result
        } catch {
            await services.triggerGracefulShutdown()
            throw error
        }
    }
}

func json(_ status: Int, _ data: Data) -> Response {
    Response(
        status: .init(code: status),
        headers: [.contentType: "application/json"],
        body: .init(byteBuffer: ByteBuffer(bytes: data))
    )
}

func problem(_ problem: ProblemDetails) -> Response {
    Response(
        status: .init(code: problem.status),
        headers: [.contentType: ProblemDetails.mediaType],
        body: .init(byteBuffer: ByteBuffer(bytes: problem.jsonData()))
    )
}

/// A second origin that records every request it gets and answers 200 `{}` to anything:
/// the tests check that no credential, signature or body ever reaches it.
final class Inspector: Sendable {
    struct Seen: Sendable, Equatable {
        var method: String
        var path: String
        var authorization: Bool
        var signature: Bool
        var bodyBytes: Int
    }

    private let log = Mutex<[Seen]>([])
    var seen: [Seen] { log.withLock { $0 } }

    func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
        let router = Router()
        for method in [HTTPRequest.Method.get, .post, .put, .delete] {
            router.on("**", method: method) { [self] request, _ -> Response in
                let bytes = try await request.body.collect(upTo: 1 << 20).readableBytes
                log.withLock {
                    $0.append(
                        Seen(
                            method: request.method.rawValue,
                            path: request.uri.path,
                            authorization: TestServer.header("authorization", request) != nil,
                            signature: TestServer.header("signature", request) != nil,
                            bodyBytes: bytes
                        )
                    )
                }
                return json(200, Data("{}".utf8))
            }
        }
        return try await serve(router, logger: Logger(label: "inspector"), body)
    }
}

/// A response that sends its head and one byte of a longer body, then drops the connection:
/// to the client, an answer lost on the way.
func droppedAnswer() -> Response {
    struct Dropped: Error {}
    return Response(
        status: .ok,
        headers: [.contentType: "application/json", .contentLength: "4096"],
        body: ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "{"))
            throw Dropped()
        }
    )
}

/// A one-way gate: `wait()` suspends until `open()` is called (at once after that).
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>(
        (false, [])
    )

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A log handler that keeps every rendered line, to check that no secret is logged, and
/// lets a test wait for a line (an event) instead of sleeping.
final class CapturingLogHandler: LogHandler, Sendable {
    private struct State {
        var lines: [String] = []
        var waiters: [(text: String, gate: Gate)] = []
    }
    private let state = Mutex(State())
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    var lines: [String] { state.withLock { $0.lines } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        let rendered =
            "\(event.level) \(event.message) \(event.metadata ?? [:]) \(event.source) \(event.file)"
        let ready = state.withLock { state in
            state.lines.append(rendered)
            let ready = state.waiters.filter { rendered.contains($0.text) }.map(\.gate)
            state.waiters.removeAll { rendered.contains($0.text) }
            return ready
        }
        for gate in ready { gate.open() }
    }

    /// A gate that opens at the first line (logged from now on, or already) containing `text`.
    func gate(forLineContaining text: String) -> Gate {
        let gate = Gate()
        let seen = state.withLock { state in
            if state.lines.contains(where: { $0.contains(text) }) { return true }
            state.waiters.append((text, gate))
            return false
        }
        if seen { gate.open() }
        return gate
    }
}

/// Captured log lines shared by loggers.
final class LogCapture: Sendable {
    let handler = CapturingLogHandler()
    var logger: Logger {
        let handler = self.handler
        var logger = Logger(label: "capture", factory: { _ in handler })
        logger.logLevel = Logger.Level.trace
        return logger
    }
    var lines: [String] { handler.lines }

    /// Waits until a line containing `text` has been logged.
    func waitForLine(containing text: String) async {
        await handler.gate(forLineContaining: text).wait()
    }
}

/// A wall clock shifted from the real one.
struct ShiftedClock: AuthClock {
    var offset: TimeInterval
    func now() -> Date { Date() + offset }
}

/// Sends a request as is (no credentials added), following every redirect.
func rawSend(_ transport: URLSessionHTTPTransport, _ request: URLRequest) async throws(AuthError)
    -> (
        Data, HTTPURLResponse
    )
{
    try await transport.send(request, deadline: .now + .seconds(10)) { _, _, new in .follow(new) }
}

/// A fresh temporary container directory (0700), removed by the caller.
func temporaryContainer() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "auth-tests-\(UUID().uuidString)"
    )
    try FileManager.default.createDirectory(
        at: url,
        withIntermediateDirectories: true,
        attributes: [.posixPermissions: 0o700]
    )
    return url
}

func makeClient(
    _ server: URL,
    _ directory: URL,
    clock: any AuthClock = SystemClock(),
    deadline: Duration = .seconds(20),
    retry: RetryPolicy = RetryPolicy(),
    logger: Logger = Logger(label: "client"),
    configure: (inout AuthClientConfiguration) -> Void = { _ in }
) -> AuthClient {
    var configuration = AuthClientConfiguration(serverURL: server, deadline: deadline, retry: retry)
    configure(&configuration)
    return AuthClient(
        configuration: configuration,
        store: TokenStore(directory: directory),
        clock: clock,
        logger: logger
    )
}

extension TestServer {
    /// Runs `body` against this server with a client (`make`, by default ``makeClient``) in a
    /// fresh 0700 container that is removed afterwards, signed in first.
    func withClient(
        making make: @Sendable (URL, URL) -> AuthClient = { makeClient($0, $1) },
        _ body: @Sendable (AuthClient) async throws -> Void
    ) async throws {
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await run { base in
            let client = make(base, directory)
            try await signIn(client)
            try await body(client)
        }
    }
}
