internal import Auth
public import Foundation
public import Logging
public import Models
internal import Plumbing
internal import SharedDefaults
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif

/// The suite's client for store-server, shared by every client app (`reservations`,
/// `catalog`): the server URL by the suite's precedence, signed requests through Auth's
/// `AuthClient`, the client configuration with its ETag and last good copy, the forced-update
/// check, the offline cache of last responses, and the suite's timeouts.
///
/// - **Timeouts.** A connect timeout (2 s) that every request races: over https a TCP probe
///   finds it out (see ``ConnectProbe``), over plain http (``SocketTransport``) each
///   request's own connection keeps it and the first one reports; and one deadline for the whole command (30 s) that every request
///   shares. Nothing shorter is hidden anywhere: a slow link that connects gets the whole
///   deadline.
/// - **Offline.** When the server cannot be reached, reads answer from the cache
///   (``Fetched/origin`` says so and how old it is); with nothing cached they throw
///   ``SuiteClientError/Code/offline``. Writes are never queued: they throw `offline`.
/// - **Writes** carry an `Idempotency-Key`, so Auth's retries never apply one twice.
/// - **Start-up cost.** Creating a client reads one settings file and nothing else: no
///   network, no cache scan; URL sessions are made on the first request.
/// - **Locks.** The client takes no file lock; settings commits (SharedDefaults) hold theirs
///   for microseconds, never across a request or a prompt.
public final class SuiteClient: Sendable {
    /// The configuration.
    public let configuration: SuiteClientConfiguration
    /// The server, resolved by the suite's precedence.
    public let server: ServerEndpoint
    /// The suite container (settings, token file, caches).
    public let container: URL
    /// The offline cache of this app's responses (`<container>/cache/<app>/`).
    public let cache: ResponseCache
    let logger: Logger
    let settings: SharedStore
    let tokens: TokenStore
    let end: ContinuousClock.Instant
    let reachability: Reachability
    let authClient = Mutex<AuthClient?>(nil)
    let sessionCheck = Mutex<Result<Void, SuiteClientError>?>(nil)
    let plainTransport = Mutex<URLSessionHTTPTransport?>(nil)

    /// The shared-settings key of the server URL stored at sign-in.
    public static let serverURLKey = "serverURL"
    /// The shared-settings key of the signed-in associate's home store id.
    public static let homeStoreKey = "homeStoreID"

    /// Opens the suite container and settings and resolves the server. Starts the command's
    /// deadline. No network.
    /// - Throws: ``SuiteClientError`` `invalidInput` (a malformed `--server` or
    ///   `SHOPFLOOR_SERVER`), `storage` (the container or settings cannot be used).
    public init(configuration: SuiteClientConfiguration, logger: Logger) throws(SuiteClientError) {
        self.configuration = configuration
        self.logger = logger
        end = ContinuousClock.now + configuration.deadline
        do {
            settings = try SharedStore(
                suite: configuration.suite,
                root: configuration.root,
                refresh: .statEveryRead,
                logger: logger
            )
        } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        container = settings.containerURL
        tokens = TokenStore(directory: container)
        server = try ServerEndpoint.resolve(
            option: configuration.serverOption,
            environment: configuration.environment,
            stored: settings.string(forKey: Self.serverURLKey)
        )
        cache = ResponseCache(
            directory: container.appendingPathComponent("cache", isDirectory: true)
                .appendingPathComponent(configuration.appName, isDirectory: true),
            logger: logger
        )
        reachability = Reachability(
            host: server.host,
            port: server.port,
            timeout: configuration.connectTimeout,
            // Through a proxy (https only) the server's own address says nothing.
            enabled: SocketTransport.serves(server.url)
                || !Reachability.proxyConfigured(configuration.environment),
            reportedByRequests: SocketTransport.serves(server.url)
        )
    }

    // MARK: Session

    /// Whether credentials are stored (not whether the server still accepts them).
    public var isSignedIn: Bool { (try? tokens.load()) != nil }

    /// The signed-in user name and the server the session belongs to, from the token file.
    public var session: (username: String?, server: String)? {
        guard let stored = try? tokens.load() else { return nil }
        return (stored.username, stored.serverURL)
    }

    /// The home store stored at sign-in, if the associate has one.
    public var homeStoreID: UUID? {
        settings.string(forKey: Self.homeStoreKey).flatMap(UUID.init(uuidString:))
    }

    /// Signs in for every suite app: checks the client configuration (forced update), signs
    /// in through Auth, stores the server URL and the associate's home store in the shared
    /// settings, and returns who signed in.
    /// - Throws: ``SuiteClientError``: `updateRequired`, `signInRequired` (refused),
    ///   `rateLimited`, `offline`, `server`, `storage`.
    @discardableResult
    public func signIn(username: String, password: String) async throws(SuiteClientError)
        -> Associate
    {
        _ = try await clientConfiguration()
        let auth = self.auth
        let remaining = remainingTime
        try await raced { () throws(SuiteClientError) in
            do throws(AuthError) {
                _ = try await auth.signIn(
                    username: username,
                    password: password,
                    deadline: remaining
                )
            } catch {
                throw Self.map(error, app: self.configuration.appName)
            }
        }
        sessionCheck.withLock { $0 = nil }
        do {
            try settings.set(.string(server.url.absoluteString), forKey: Self.serverURLKey)
        } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        let associate = try await me()
        do {
            try settings.set(
                associate.homeStoreID.map { .string($0.uuidString) },
                forKey: Self.homeStoreKey
            )
        } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        logger.info("signed in", metadata: ["user": "\(username)", "server": "\(server)"])
        return associate
    }

    /// Whether the stored session belongs to this server (same scheme, host and port).
    /// Credentials are only ever sent to the server that issued them: with `--server`
    /// pointing elsewhere, signed requests fail with `signInRequired` and public ones go
    /// unsigned.
    public var isSignedInHere: Bool {
        if case .success = checkSession() { return true }
        return false
    }

    /// Checks once per client that a session exists and belongs to ``server``.
    func checkSession() -> Result<Void, SuiteClientError> {
        sessionCheck.withLock { cached in
            if let cached { return cached }
            let result: Result<Void, SuiteClientError>
            do throws(AuthError) {
                if let stored = try tokens.load() {
                    let issuer = try? ServerEndpoint(
                        parsing: stored.serverURL,
                        source: .stored,
                        origin: "the session's server"
                    )
                    if issuer?.origin == server.origin {
                        result = .success(())
                    } else {
                        result = .failure(
                            SuiteClientError(
                                .signInRequired,
                                "signed in to \(stored.serverURL), not to \(server): run `\(configuration.appName) login --server \(server)`"
                            )
                        )
                    }
                } else {
                    result = .failure(
                        SuiteClientError(
                            .signInRequired,
                            "not signed in: run `\(configuration.appName) login`"
                        )
                    )
                }
            } catch {
                // A damaged token file is a sign-in to make again (77); an unreadable one a
                // storage failure (1).
                result = .failure(Self.map(error, app: configuration.appName))
            }
            cached = result
            return result
        }
    }

    /// The signed-in associate (`GET /v1/me`).
    public func me() async throws(SuiteClientError) -> Associate {
        let (data, response) = try await send(request(path: "/v1/me"))
        try check(response, data, what: "your account")
        return try decode(Associate.self, data, what: "/v1/me")
    }

}
