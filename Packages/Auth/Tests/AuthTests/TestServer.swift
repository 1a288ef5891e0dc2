import Auth
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
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
    let knobs = Mutex(Knobs())
    let logger: Logger

    init(accessTokenLifetime: TimeInterval = 900, logger: Logger = Logger(label: "test-server"))
        throws
    {
        self.logger = logger
        issuer = TokenIssuer(accessTokenLifetime: accessTokenLifetime, logger: logger)
        verifier = SignatureVerifier(logger: logger)
        passwordHash = try PasswordHasher(iterations: 1_000).hash(Self.password)
    }

    var refreshCount: Int { knobs.withLock { $0.refreshCount } }
    func hits(_ key: String) -> Int { knobs.withLock { $0.hits[key, default: 0] } }
    var rejections: [String] { knobs.withLock { $0.rejections } }

    /// Runs the server on port 0 and calls `body` with its base URL.
    func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
        let app = Application(
            router: makeRouter(),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: logger
        )
        return try await app.test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port!)")!)
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
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0))
        )
        return try await app.test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port!)")!)
        }
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
                guard user == Self.username,
                    try PasswordHasher().verify(password, against: passwordHash)
                else {
                    return problem(
                        ProblemDetails(
                            type: AuthProblemType.invalidCredentials,
                            title: "Wrong user name or password",
                            status: 401
                        )
                    )
                }
                return json(200, issuer.issue(subject: user).jsonData())
            case .refreshToken(let token):
                let (delay, failure) = knobs.withLock { knobs in
                    knobs.refreshCount += 1
                    return (knobs.refreshDelay, knobs.refreshFailsWith)
                }
                try await Task.sleep(for: delay)
                if let failure { return json(failure, Data("{}".utf8)) }
                do {
                    return json(200, try issuer.refresh(refreshToken: token).jsonData())
                } catch {
                    return problem(
                        ProblemDetails(
                            type: AuthProblemType.invalidGrant,
                            title: "Refresh token refused",
                            status: 400
                        )
                    )
                }
            }
        }
        router.post("/v1/auth/revoke") { [self] request, _ -> Response in
            let body = Array(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
            if let token = FormEncoding.decode(body)["token"] { issuer.revoke(token: token) }
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
                try await Task.sleep(for: .seconds(4))
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
            session = try issuer.authenticate(authorization: authorization)
        } catch {
            knobs.withLock { $0.rejections.append("token:\(error.reason.rawValue)") }
            return problem(error.problem)
        }
        let target = "http://\(request.head.authority ?? "?")\(request.uri.string)"
        do {
            _ = try verifier.verify(
                method: request.method.rawValue,
                targetURI: target,
                signatureInput: Self.header("signature-input", request),
                signature: Self.header("signature", request),
                contentDigest: Self.header("content-digest", request),
                body: bytes,
                key: session.signingKey
            )
        } catch {
            knobs.withLock { $0.rejections.append(error.reason.rawValue) }
            return problem(error.problem)
        }
        return try await body(session, bytes)
    }

    static func header(_ name: String, _ request: Request) -> String? {
        request.headers.first { $0.name.canonicalName == name }?.value
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
