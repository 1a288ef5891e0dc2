import Auth
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A small store-server stand-in on a real socket: the token endpoint, revocation, and
/// signed routes checked with `TokenIssuer` and `SignatureVerifier`.
final class TestServer: Sendable {
    struct Knobs {
        var refreshDelay: Duration = .zero
        var refreshFailsWith: Int?
        var refreshCount = 0
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
    let logger: Logger

    init(accessTokenLifetime: TimeInterval = 900, logger: Logger = Logger(label: "test-server"))
        throws
    {
        self.logger = logger
        issuer = TokenIssuer(accessTokenLifetime: accessTokenLifetime, logger: logger)
        verifier = SignatureVerifier(logger: logger)
        passwordHash = try hasher.hash(Self.password)
    }

    var refreshCount: Int { knobs.withLock { $0.refreshCount } }
    func hits(_ key: String) -> Int { knobs.withLock { $0.hits[key, default: 0] } }
    var rejections: [String] { knobs.withLock { $0.rejections } }

    /// Runs the server on port 0 and calls `body` with its base URL.
    func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
        defer { stallGate.open() }
        return try await serve(makeRouter(), logger: logger) { url in
            defer { stallGate.open() }
            return try await body(url)
        }
    }

    /// A second origin: `/inspect` reports which credential headers arrived.
    static func runInspector<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws
        -> T
    {
        let router = Router()
        router.get("/inspect") { request, _ -> Response in
            let seen: [String: Bool] = [
                "authorization": header("authorization", request) != nil,
                "signature": header("signature", request) != nil,
                "signatureInput": header("signature-input", request) != nil,
            ]
            return json(200, try JSONEncoder().encode(seen))
        }
        return try await serve(router, logger: Logger(label: "inspector"), body)
    }

    private func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/v1/auth/token") { [self] request, _ -> Response in
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
                let (delay, failure) = knobs.withLock { knobs in
                    knobs.refreshCount += 1
                    return (knobs.refreshDelay, knobs.refreshFailsWith)
                }
                try await Task.sleep(for: delay)
                if let failure { return json(failure, Data("{}".utf8)) }
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
                await stallGate.wait()  // opened when the test's body has finished
                return json(200, Data("{}".utf8))
            }
        }
        router.get("/v1/redirect") { [self] request, _ -> Response in
            try await guarded(request) { _, _ in
                let target = request.uri.queryParameters.get("to") ?? "/v1/echo"
                return Response(status: .found, headers: [.location: target])
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
    logger: Logger,
    _ body: @Sendable (URL) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = Application(
        router: router,
        configuration: .init(address: .hostname("127.0.0.1", port: 0)),
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
            let result = try await body(URL(string: "http://127.0.0.1:\(port)")!)
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

/// A log handler that keeps every rendered line, to check that no secret is logged.
final class CapturingLogHandler: LogHandler, Sendable {
    let lines: Mutex<[String]>
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    init() { lines = Mutex([]) }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        let rendered =
            "\(event.level) \(event.message) \(event.metadata ?? [:]) \(event.source) \(event.file)"
        lines.withLock { $0.append(rendered) }
    }
}

/// Captured log lines shared by loggers.
final class LogCapture: Sendable {
    private let handler = CapturingLogHandler()
    var logger: Logger {
        let handler = self.handler
        var logger = Logger(label: "capture", factory: { _ in handler })
        logger.logLevel = Logger.Level.trace
        return logger
    }
    var lines: [String] { handler.lines.withLock { $0 } }
}

/// A wall clock shifted from the real one.
struct ShiftedClock: AuthClock {
    var offset: TimeInterval
    func now() -> Date { Date() + offset }
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
    logger: Logger = Logger(label: "client")
) -> AuthClient {
    AuthClient(
        configuration: AuthClientConfiguration(serverURL: server, deadline: deadline, retry: retry),
        store: TokenStore(directory: directory),
        clock: clock,
        logger: logger
    )
}
