import Auth
import Foundation
import Logging
import Models
import TestSupport
import Testing

@testable import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client configuration of version 1.0.0 asking for 1.0.0 at least: no store, no flags.
func minimalConfiguration() throws -> ClientConfigurationResponse {
    ClientConfigurationResponse(
        configuration: try ClientConfiguration(
            configVersion: SemanticVersion(1, 0, 0),
            minimumClientVersion: SemanticVersion(1, 0, 0)
        ),
        store: nil,
        flags: [:],
        updateRequired: false
    )
}

/// A temporary SHOPFLOOR_HOME-like root, removed by the caller.
func temporaryRoot() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("suiteclient-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(
        at: url,
        withIntermediateDirectories: true,
        attributes: [.posixPermissions: 0o700]
    )
    return url
}

let quietLogger: Logger = {
    var logger = Logger(label: "suite-client-tests")
    logger.logLevel = .critical
    return logger
}()

/// A TCP listener on 127.0.0.1 with an OS-chosen port that never accepts. With `fill`, its
/// accept queue is filled first, so further connection attempts get no answer at all (the
/// kernel drops their SYNs), as on a dead network.
final class SilentListener {
    let fd: Int32
    let port: Int
    private var clients: [Int32] = []

    init(fill: Bool) throws {
        (fd, port) = try PeerListener.listeningSocket(backlog: 0)
        if fill {
            // A backlog of 0 holds one or two completed connections; then SYNs are dropped.
            for _ in 0..<4 {
                let client = socket(
                    AF_INET,
                    Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                    0
                )
                var target = sockaddr_in()
                target.sin_family = sa_family_t(AF_INET)
                target.sin_addr.s_addr = inet_addr("127.0.0.1")
                target.sin_port = in_port_t(UInt16(port).bigEndian)
                _ = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                clients.append(client)
            }
            Thread.sleep(forTimeInterval: 0.2)  // let the handshakes that can finish, finish
        }
    }

    deinit {
        for client in clients { close(client) }
        close(fd)
    }
}

/// A port on 127.0.0.1 where nothing listens: a socket bound to it that never listens, so a
/// connection is refused, kept until ``release()`` so that no other listener takes the port
/// meanwhile. (A port bound and closed at once was taken by another test's server in the same
/// process: a write meant for nowhere reached it, and both tests failed.)
final class ClosedPort {
    let port: Int
    private let fd: Int32

    init() throws {
        func failure(_ call: String) -> PeerListener.Failure {
            PeerListener.Failure(description: "\(call): \(String(cString: strerror(errno)))")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let error = failure("bind")
            close(fd)
            throw error
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Gives the port back (the test is done with it).
    func release() { close(fd) }
}

@Suite("Server URL resolution")
struct ServerEndpointTests {
    @Test(
        "The URL comes from --server, then SHOPFLOOR_SERVER, then the stored one, then the default",
        arguments: [
            ("http://a:1", "http://b:2", "http://c:3", "http://a:1", ServerEndpoint.Source.option),
            (nil, "http://b:2", "http://c:3", "http://b:2", .environment),
            (nil, nil, "http://c:3", "http://c:3", .stored),
            (nil, nil, nil, "http://127.0.0.1:8080", .builtIn),
            (nil, nil, "not a url", "http://127.0.0.1:8080", .builtIn),
            (nil, "", "https://store.example", "https://store.example", .stored),
        ] as [(String?, String?, String?, String, ServerEndpoint.Source)]
    )
    func precedence(
        option: String?,
        variable: String?,
        stored: String?,
        expected: String,
        source: ServerEndpoint.Source
    ) throws {
        var environment: [String: String] = [:]
        if let variable { environment["SHOPFLOOR_SERVER"] = variable }
        let endpoint = try ServerEndpoint.resolve(
            option: option,
            environment: environment,
            stored: stored
        )
        #expect(endpoint.url.absoluteString == expected)
        #expect(endpoint.source == source)
    }

    @Test(
        "A malformed --server is refused naming the option and the problem",
        arguments: [
            ("ftp://host", "not an http or https URL"),
            ("http://", "no host"),
            ("http://host/v1", "without a path"),
            ("http://user:pw@host", "user name or password"),
            ("http://host:70000", "port outside 1…65535"),
            ("localhost:8080", "not an http or https URL"),
        ]
    )
    func malformed(text: String, problem: String) {
        #expect {
            try ServerEndpoint.resolve(option: text, environment: [:], stored: nil)
        } throws: { error in
            guard let error = error as? SuiteClientError else { return false }
            return error.code == .invalidInput && error.message.contains("--server")
                && error.message.contains(problem) && error.exitCode == 64
        }
    }

    @Test("Host names are lower-cased and the origin makes default ports explicit")
    func normalized() throws {
        let endpoint = try ServerEndpoint(
            parsing: "HTTPS://Store.Example/",
            source: .option,
            origin: "--server"
        )
        #expect(endpoint.url.absoluteString == "https://store.example")
        #expect(endpoint.origin == "https://store.example:443")
        let v6 = try ServerEndpoint(parsing: "http://[::1]:9000", source: .option, origin: "x")
        #expect(v6.host == "::1")
        #expect(v6.port == 9000)
    }
}

@Suite("Reservation references")
struct ReferenceTests {
    @Test(
        "An id is a UUID and anything else a confirmation code in any accepted form",
        arguments: [
            ("5D0F1C2A-0001-4A00-8000-000000000001", true),
            ("5d0f1c2a-0001-4a00-8000-000000000001", true),
            ("41SJ-3EQ4", false),
            ("41sj3eq4", false),
            ("shopfloor://reservations/41SJ-3EQ4", false),
            (" 41SJ 3EQ4 ", false),
        ]
    )
    func forms(text: String, isID: Bool) throws {
        let reference = try ReservationReference(parsing: text)
        switch reference {
        case .id: #expect(isID)
        case .code(let code):
            #expect(!isID)
            #expect(code.description == "41SJ-3EQ4")
        }
    }

    @Test("Text that is neither is a usage error naming it")
    func neither() {
        #expect {
            try ReservationReference(parsing: "41SJ-3EQ5")  // wrong check symbol
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .invalidInput && error?.message.contains("41SJ-3EQ5") == true
        }
    }
}

@Suite("Offline cache of last responses")
struct ResponseCacheTests {
    @Test("An entry reads back with its body, tag and time; another key misses; files are private")
    func roundTrip() throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("c")
        let cache = ResponseCache(directory: folder, logger: quietLogger)
        let key = ResponseKey(namespace: "reservation", name: "http://h:1 /v1/reservations/x")
        let when = Date(timeIntervalSince1970: 1_750_000_000)
        try cache.write(key, body: Data("{\"a\":1}".utf8), etag: "\"3\"", fetchedAt: when)
        let entry = try #require(cache.read(key))
        #expect(entry.body == Data("{\"a\":1}".utf8))
        #expect(entry.etag == "\"3\"")
        #expect(entry.fetchedAt == when)
        #expect(cache.read(ResponseKey(namespace: "reservation", name: "http://h:2 /v1/x")) == nil)
        let mode =
            try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions]
            as? Int
        #expect(mode == 0o700)
    }

    @Test("The cache is bounded: older responses are evicted to stay under the size limit")
    func bounded() throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = ResponseCache(directory: root, sizeLimit: 64 << 10, logger: quietLogger)
        let body = Data(repeating: 0x41, count: 4 << 10)
        for index in 0..<100 {
            try cache.write(ResponseKey(namespace: "a", name: "k\(index)"), body: body, etag: nil)
        }
        let kept = cache.entries(namespace: "a")
        #expect(kept.count < 16)
        #expect(cache.read(ResponseKey(namespace: "a", name: "k99")) != nil)
        #expect(cache.read(ResponseKey(namespace: "a", name: "k0")) == nil)
        var total = 0
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        while let name = enumerator?.nextObject() as? String {
            let path = root.appendingPathComponent(name).path
            guard name.count == 35,
                let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            total += (attributes[.size] as? Int) ?? 0
        }
        #expect(total <= 64 << 10)
    }

    @Test("A FIFO or a directory in an entry's place is a miss, not a hang")
    func nonRegularEntries() throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = ResponseCache(directory: root, logger: quietLogger)
        let key = ResponseKey(namespace: "x", name: "k")
        try cache.write(key, body: Data("v".utf8), etag: nil)
        let entry = try #require(
            FileManager.default.subpaths(atPath: root.path)?.first { $0.count == 35 }
        )
        let path = root.appendingPathComponent(entry).path
        unlink(path)
        #expect(mkfifo(path, 0o600) == 0)
        #expect(cache.read(key) == nil)
        #expect(cache.entries(namespace: "x").isEmpty)
        unlink(path)
        #expect(mkdir(path, 0o700) == 0)
        #expect(cache.read(key) == nil)
    }

    @Test("Concurrent writers of one key leave one whole entry, never a mix")
    func concurrentWriters() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = ResponseCache(directory: root, logger: quietLogger)
        let key = ResponseKey(namespace: "x", name: "k")
        let bodies = (0..<8).map { Data(String(repeating: "\($0)", count: 50_000).utf8) }
        await withTaskGroup(of: Void.self) { group in
            for body in bodies {
                group.addTask {
                    for _ in 0..<20 { try? cache.write(key, body: body, etag: nil) }
                }
            }
            group.addTask {
                for _ in 0..<200 {
                    if let entry = cache.read(key) { #expect(bodies.contains(entry.body)) }
                }
            }
        }
        #expect(bodies.contains(try #require(cache.read(key)).body))
    }

    @Test("Entries of a namespace are listed newest first and removeAll empties the cache")
    func namespaces() throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = ResponseCache(directory: root, logger: quietLogger)
        for index in 0..<5 {
            try cache.write(
                ResponseKey(namespace: "a", name: "k\(index)"),
                body: Data([UInt8(index)]),
                etag: nil,
                fetchedAt: Date(timeIntervalSince1970: Double(1_000 + index))
            )
        }
        try cache.write(ResponseKey(namespace: "b", name: "other"), body: Data(), etag: nil)
        let entries = cache.entries(namespace: "a")
        #expect(entries.map(\.key.name) == ["k4", "k3", "k2", "k1", "k0"])
        #expect(try cache.removeAll() == 6)
        #expect(cache.entries(namespace: "a").isEmpty)
        #expect(cache.read(ResponseKey(namespace: "b", name: "other")) == nil)
    }

    @Test("The first format's flat entry files are removed when the cache is opened")
    func firstFormatRemoved() throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let old = root.appendingPathComponent("reservation-00ff00ff00ff00ff.entry")
        try Data("{\"key\":\"k\"}\ncustomer".utf8).write(to: old)
        try Data().write(to: root.appendingPathComponent(".pruned"))
        let cache = ResponseCache(directory: root, logger: quietLogger)
        #expect(cache.read(ResponseKey(namespace: "reservation", name: "k")) == nil)
        #expect(!FileManager.default.fileExists(atPath: old.path))
    }
}

@Suite("Connect timeout")
struct ConnectProbeTests {
    @Test("A listening port is reachable")
    func reachable() async throws {
        let listener = try SilentListener(fill: false)
        let outcome = await ConnectProbe.run(
            host: "127.0.0.1",
            port: listener.port,
            timeout: .seconds(2)
        )
        #expect(outcome == .reachable)
    }

    // The timings below are of the blocking probe on the calling thread: the async entry
    // point resumes on the cooperative pool, which the end-to-end suites of the same test
    // process hold in blocking waits for their child processes on a loaded machine.

    @Test("A closed port is unreachable at once: connection refused")
    func refused() async throws {
        let closed = try ClosedPort()
        defer { closed.release() }
        let port = closed.port
        let started = ContinuousClock.now
        let direct = ConnectProbe.blockingProbe(host: "127.0.0.1", port: port, timeout: .seconds(2))
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(direct == .unreachable("connection refused"))
        let outcome = await ConnectProbe.run(host: "127.0.0.1", port: port, timeout: .seconds(2))
        #expect(outcome == .unreachable("connection refused"))
    }

    @Test("A host that never answers is given up on at the connect timeout")
    func silent() async throws {
        let listener = try SilentListener(fill: true)
        let started = ContinuousClock.now
        let direct = ConnectProbe.blockingProbe(
            host: "127.0.0.1",
            port: listener.port,
            timeout: .milliseconds(700)
        )
        let elapsed = ContinuousClock.now - started
        #expect(direct == .unreachable("no answer within 700 ms"))
        #expect(elapsed >= .milliseconds(650))
        #expect(elapsed < .milliseconds(1_700))
        // The async entry point gives the same answer; without the timeout a SYN to a full
        // queue is retried for over a minute.
        let asyncStarted = ContinuousClock.now
        let outcome = await ConnectProbe.run(
            host: "127.0.0.1",
            port: listener.port,
            timeout: .milliseconds(700)
        )
        #expect(outcome == .unreachable("no answer within 700 ms"))
        #expect(ContinuousClock.now - asyncStarted < .seconds(20))
    }

    @Test("A name that does not resolve is unreachable, naming the host")
    func unresolvable() async {
        let outcome = await ConnectProbe.run(
            host: "no-such-host.invalid",
            port: 80,
            timeout: .seconds(2)
        )
        guard case .unreachable(let reason) = outcome else {
            Issue.record("resolved no-such-host.invalid")
            return
        }
        #expect(reason.contains("no-such-host.invalid"))
    }
}

@Suite("Client behaviour without a server")
struct OfflineClientTests {
    func client(
        port: Int,
        root: URL,
        host: String = "127.0.0.1",
        connectTimeout: Duration = .seconds(2),
        deadline: Duration = .seconds(30)
    ) throws -> SuiteClient {
        try SuiteClient(
            configuration: SuiteClientConfiguration(
                appName: "reservations",
                appVersion: SemanticVersion(1, 2, 3),
                serverOption: "http://\(host):\(port)",
                connectTimeout: connectTimeout,
                deadline: deadline,
                root: root,
                environment: [:]
            ),
            logger: quietLogger
        )
    }

    @Test(
        "With no server and nothing kept, a read fails as offline (exit 6) within the connect timeout"
    )
    func offlineWithoutCache() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let listener = try SilentListener(fill: true)
        let client = try client(port: listener.port, root: root, connectTimeout: .milliseconds(600))
        let started = ContinuousClock.now
        await #expect {
            _ = try await client.clientConfiguration()
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .offline && error?.exitCode == 6
                && error?.message.contains("no answer within 600 ms") == true
        }
        // The message shows the connect timeout ended it; the time only that the 30 s command
        // deadline did not (the margin is for a loaded machine, see `silent()`).
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test(
        "A plain-http server whose name does not resolve is offline at once, naming the host, not at the deadline"
    )
    func unresolvableServer() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        // No probe runs over plain http: the request's own failed lookup must end the race,
        // or the command would wait for its deadline (here 120 s, far beyond any resolver's
        // retries, so only that wait fails the time check).
        let client = try client(
            port: 80,
            root: root,
            host: "no-such-host.invalid",
            deadline: .seconds(120)
        )
        let started = ContinuousClock.now
        await #expect {
            _ = try await client.clientConfiguration()
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .offline
                && error?.message.contains("no-such-host.invalid") == true
                && error?.message.contains("cannot resolve") == true
        }
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    @Test("The last good configuration answers offline, and still enforces the minimum version")
    func keptConfiguration() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let closed = try ClosedPort()
        defer { closed.release() }
        let port = closed.port
        let client = try client(port: port, root: root)
        let response = try minimalConfiguration()
        let key = ResponseKey(
            namespace: "config",
            name: "\(client.server.origin) reservations global"
        )
        let kept = Date(timeIntervalSinceNow: -600)
        try client.cache.write(
            key,
            body: try ModelsJSON.makeEncoder().encode(response),
            etag: "\"1.0.0-x\"",
            fetchedAt: kept
        )
        let fetched = try await client.clientConfiguration()
        guard case .cache(let fetchedAt, let reason) = fetched.origin else {
            Issue.record("not from the cache")
            return
        }
        #expect(abs(fetchedAt.timeIntervalSince(kept)) < 0.01)
        #expect(reason.contains("connection refused"))

        var newer = response
        newer.configuration.minimumClientVersion = SemanticVersion(2, 0, 0)
        try client.cache.write(key, body: try ModelsJSON.makeEncoder().encode(newer), etag: nil)
        await #expect {
            _ = try await client.clientConfiguration()
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .updateRequired && error?.exitCode == 5
                && error?.message.contains("1.2.3") == true
                && error?.message.contains("2.0.0") == true
        }
    }

    @Test("A session is never sent to a server other than the one that issued it")
    func sessionBoundToItsServer() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let listener = try SilentListener(fill: false)
        let client = try client(port: listener.port, root: root)
        try client.tokens.save(StoredCredentialsFixture.make(server: "http://127.0.0.1:1"))
        #expect(client.isSignedIn)
        #expect(!client.isSignedInHere)
        await #expect {
            _ = try await client.me()
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .signInRequired && error?.exitCode == 77
                && error?.message.contains("signed in to http://127.0.0.1:1") == true
        }
    }

    @Test("Writes are never queued: offline they fail and say nothing was sent")
    func writesNotQueued() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let closed = try ClosedPort()
        defer { closed.release() }
        let client = try client(port: closed.port, root: root)
        // A stored session, so the write gets as far as the network.
        try client.tokens.save(
            StoredCredentialsFixture.make(server: client.server.url.absoluteString)
        )
        await #expect {
            _ = try await client.checkIn(UUID())
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .offline && error?.message.contains("was not sent") == true
        }
    }
}

@Suite("Problem documents become typed errors")
struct ProblemMappingTests {
    @Test(
        "Each status and problem type maps to the suite's code and exit status",
        arguments: [
            (400, ProblemType.badRequest, SuiteClientError.Code.invalidInput, Int32(64)),
            (401, "https://shopfloor.dev/problems/auth/invalid-token", .signInRequired, 77),
            (403, ProblemType.featureDisabled, .featureDisabled, 1),
            (403, ProblemType.forbidden, .notPermitted, 13),
            (404, ProblemType.notFound, .notFound, 3),
            (409, ProblemType.invalidTransition, .conflict, 1),
            (412, ProblemType.versionMismatch, .conflict, 1),
            (422, ProblemType.validationFailed, .validationFailed, 64),
            (426, ProblemType.updateRequired, .updateRequired, 5),
            (429, ProblemType.rateLimited, .rateLimited, 1),
            (500, ProblemType.internal, .server, 1),
            (503, ProblemType.unavailable, .offline, 6),
        ]
    )
    func mapping(status: Int, type: String, code: SuiteClientError.Code, exit: Int32) throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let client = try SuiteClient(
            configuration: SuiteClientConfiguration(
                appName: "reservations",
                appVersion: SemanticVersion(1, 0, 0),
                root: root,
                environment: [:]
            ),
            logger: quietLogger
        )
        let problem = APIProblem(
            type: type,
            title: "t",
            status: status,
            detail: "detail naming the input",
            errors: status == 422
                ? [
                    APIProblem.FieldError(
                        field: "email",
                        code: "invalidEmail",
                        message: "E-mail is not an e-mail address"
                    )
                ]
                : nil
        )
        let body = try ModelsJSON.makeEncoder().encode(problem)
        let response = try #require(
            HTTPURLResponse(
                url: URL(string: "http://127.0.0.1:8080/v1/x")!,
                statusCode: status,
                httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "application/problem+json"]
            )
        )
        #expect {
            try client.check(response, body, what: "x")
        } throws: { error in
            guard let error = error as? SuiteClientError else { return false }
            return error.code == code && error.exitCode == exit && error.status == status
                && error.message.contains("detail naming the input")
                && (status != 422 || error.description.contains("email: E-mail is not"))
        }
    }
}

@Suite("Auth's errors become the suite's")
struct AuthErrorMappingTests {
    @Test(
        "Each Auth error code maps to the suite's code and exit status, naming the way out",
        arguments: [
            (
                AuthError.Code.signInRequired, SuiteClientError.Code.signInRequired, Int32(77),
                "login"
            ),
            (.invalidCredentials, .signInRequired, 77, "wrong user name or password"),
            (.originMismatch, .signInRequired, 77, "login --server"),
            (.insecureTransport, .invalidInput, 64, "plain http"),
            (.transport, .offline, 6, "connection"),
            (.deadlineExceeded, .offline, 6, "connection"),
            (.cancelled, .cancelled, 130, "connection"),
            (.tokenStore, .storage, 1, "connection"),
            (.untrustedServer, .server, 1, "connection"),
        ]
    )
    func mapping(auth: AuthError.Code, code: SuiteClientError.Code, exit: Int32, names: String) {
        let error = SuiteClient.map(
            AuthError(auth, "connection to 127.0.0.1:9 over plain http"),
            app: "catalog"
        )
        #expect(error.code == code)
        #expect(error.exitCode == exit)
        #expect(error.description.contains(names), "\(error.description)")
        #expect(auth != .signInRequired || error.description.contains("catalog login"))
    }

    @Test(
        "A 429 from the token endpoint says to wait as long as the server asked, without blaming failures"
    )
    func signInLimited() {
        // The server answers 429 both after failed sign-ins and to a third sign-in of one user
        // at once; a person who typed nothing wrong must not read that they did.
        var limited = AuthError(.invalidResponse, "the token endpoint answered 429", status: 429)
        limited.retryAfter = .seconds(1)
        let error = SuiteClient.map(limited, app: "reservations")
        #expect(error.code == .rateLimited)
        #expect(error.exitCode == 1)
        #expect(error.description.contains("too many sign-in attempts; try again in 1 second"))
        #expect(!error.description.contains("failed"), "\(error.description)")
        limited.retryAfter = nil
        let unsaid = SuiteClient.map(limited, app: "reservations")
        #expect(unsaid.description.contains("try again later"), "\(unsaid.description)")
    }
}

/// Credentials as a sign-in would store them (the server never sees them in these tests).
enum StoredCredentialsFixture {
    static func make(server: String) throws -> StoredCredentials {
        let json = """
            {"accessToken": "a", "refreshToken": "r", "expiresAt": \(Date(timeIntervalSinceNow: 3_600).timeIntervalSinceReferenceDate),
             "signingKeyID": "k1", "signingKey": "\(Data(repeating: 7, count: 32).base64EncodedString())",
             "serverURL": "\(server)", "username": "demo", "lifetime": 900}
            """
        return try JSONDecoder().decode(StoredCredentials.self, from: Data(json.utf8))
    }
}

@Suite("A plain-http client's connections and kept configuration")
struct PlainHTTPClientTests {
    @Test(
        "Requests open no connection but their own; a 304 rewrites the kept configuration only when it is a minute old"
    )
    func ownConnectionsOnly() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let body = try ModelsJSON.makeEncoder().encode(try minimalConfiguration())
        let etag = "\"1.0.0-x\""
        let ok =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: \(etag)\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            + String(decoding: body, as: UTF8.self)
        let notModified = "HTTP/1.1 304 Not Modified\r\nETag: \(etag)\r\nConnection: close\r\n\r\n"
        let server = try ScriptedServer([.text(ok), .text(notModified), .text(notModified)])
        let client = try SuiteClient(
            configuration: SuiteClientConfiguration(
                appName: "reservations",
                appVersion: SemanticVersion(1, 2, 3),
                serverOption: server.url.absoluteString,
                root: root,
                environment: [:]
            ),
            logger: quietLogger
        )
        let key = ResponseKey(
            namespace: "config",
            name: "\(client.server.origin) reservations global"
        )

        let first = try await client.clientConfiguration()
        #expect(!first.isFromCache)
        let keptAt = try #require(client.cache.read(key)).fetchedAt

        // Confirmed by a 304 within the minute: the kept copy is not written again.
        let second = try await client.clientConfiguration()
        #expect(!second.isFromCache)
        #expect(server.requests.last?.lowercased().contains("if-none-match: \(etag)") == true)
        #expect(client.cache.read(key)?.fetchedAt == keptAt)

        // A copy two minutes old is written again with the time of the check.
        try client.cache.write(
            key,
            body: body,
            etag: etag,
            fetchedAt: Date(timeIntervalSinceNow: -120)
        )
        _ = try await client.clientConfiguration()
        let rewritten = try #require(client.cache.read(key)).fetchedAt
        #expect(abs(rewritten.timeIntervalSinceNow) < 30)

        // A connect probe's connection would have reached the server by now.
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.requests.count == 3)
        #expect(server.accepted == 3)
    }
}
