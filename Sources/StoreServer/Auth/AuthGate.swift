internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Logging
internal import Models
internal import SQLKit

/// Who made a signed request.
struct SignedIn: Sendable {
    var subject: String
    var sessionID: String
    var keyID: String
    /// What the user may see, read from the database for this request.
    var access = Access.nothing

    /// The stores the caller may see.
    var scope: StoreScope { access.scope }
}

/// Checks bearer tokens and request signatures, and issues tokens, with Auth's
/// `TokenIssuer` and `SignatureVerifier` over the database's session and nonce stores.
final class AuthGate: Sendable {
    let issuer: TokenIssuer
    let verifier: SignatureVerifier
    let sessions: SQLSessionStore
    let nonces: SQLNonceStore
    /// The signing keys of tokens that passed the gate (PostgreSQL).
    let keys = SessionKeyCache()
    let logger: Logger
    /// The database's clock: the replay window, nonce expiry and token lifetimes are judged
    /// by it on every instance.
    let clock: DatabaseClock

    init(
        database: StoreDatabase,
        accessTokenTTL: TimeInterval,
        refreshTokenTTL: TimeInterval,
        sessionLifetime: TimeInterval,
        rotationSecret: [UInt8],
        window: Int64,
        clock: DatabaseClock,
        logger: Logger
    ) {
        self.logger = logger
        self.clock = clock
        sessions = SQLSessionStore(database: database)
        nonces = SQLNonceStore(database: database)
        issuer = TokenIssuer(
            store: sessions,
            accessTokenLifetime: accessTokenTTL,
            refreshTokenLifetime: refreshTokenTTL,
            sessionLifetime: sessionLifetime,
            rotationSecret: rotationSecret,
            logger: logger
        )
        verifier = SignatureVerifier(
            window: window,
            futureWindow: nonces.futureWindow,
            store: nonces,
            logger: logger
        )
    }

    /// The session of `request`'s bearer token (one read), before its signature is checked.
    func session(of request: Request) async throws(APIError) -> AuthSession {
        let now = clock.now()
        do {
            return try await issuer.authenticate(
                authorization: request.headers[.authorization],
                now: now
            )
        } catch {
            throw rejected(error)
        }
    }

    /// A refused bearer token's answer (401 with `WWW-Authenticate`, or 503 when the store
    /// failed), logged.
    private func rejected(_ error: TokenRejection) -> APIError {
        if !error.isTransient {
            logger.notice("access token rejected", metadata: ["reason": "\(error.reason.rawValue)"])
        }
        return APIError.auth(
            error.problem,
            headers: error.isTransient ? [(.retryAfter, "1")] : [(.wwwAuthenticate, "Bearer")]
        )
    }

    /// Keeps the session of `request`'s bearer token, which passed the gate, for
    /// ``signedInWithCachedKey(_:body:scheme:)`` (PostgreSQL only: on SQLite the token's read
    /// is a local one, and the nonce's write waits for the write lock).
    func remember(_ session: AuthSession, of request: Request) {
        guard let digest = cacheKey(of: request) else { return }
        keys.remember(session, digest: digest)
    }

    /// The digest of `request`'s bearer token, under which ``keys`` keeps its session; nil on
    /// SQLite or without a bearer token.
    private func cacheKey(of request: Request) -> String? {
        guard sessions.database.kind == .postgres,
            let token = try? TokenIssuer.bearerToken(request.headers[.authorization])
        else { return nil }
        return TokenIssuer.digest(token)
    }

    /// The caller of `request` when its token's session is in ``keys``: the signature is
    /// checked with the cached key, then one statement records the nonce and reads the token,
    /// its session and the user's access again (``TokenRecheck``), which are checked as
    /// ``session(of:)`` and ``verify(_:body:scheme:session:)`` check them. Nil when the token
    /// is not cached (always on SQLite): the caller takes the two-statement way.
    func signedInWithCachedKey(_ request: Request, body: [UInt8], scheme: String)
        async throws(APIError) -> SignedIn?
    {
        guard let digest = cacheKey(of: request),
            let cached = keys.session(digest: digest, now: clock.now())
        else { return nil }
        let recheck = TokenRecheck(digest: digest)
        var signedIn: SignedIn
        do {
            signedIn = try await TokenRecheck.$current.withValue(recheck) {
                try await verify(request, body: body, scheme: scheme, session: cached)
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw rejected(TokenRejection(reason: .unavailable, cause: error))
        }
        let now = clock.now()
        // A database error or an unreadable row below is `unavailable` (the generic catch):
        // transient, so the key stays cached and the client's retry may succeed.
        do {
            // The nonce store reads the rows in its statement; inside a unit of work, where
            // no prepared statement runs, it records the nonce alone and they are read here.
            let rows: [any SQLRow]
            if let read = recheck.rows {
                rows = read
            } else {
                rows = try await sessions.tokenWithAccessRows(digest: digest)
            }
            let found = try SQLSessionStore.tokenWithSession(fromRows: rows)
            signedIn.access = try UserRepository.access(fromAccessRows: rows)
            guard let (record, session) = found else { throw TokenRejection(reason: .unknown) }
            let current = try issuer.check(access: record, session: session, now: now)
            guard current.id == cached.id, current.signingKey.id == cached.signingKey.id else {
                throw TokenRejection(reason: .unknown)
            }
        } catch let error as TokenRejection {
            if !error.isTransient { keys.forget(digest: digest) }
            throw rejected(error)
        } catch {
            throw rejected(TokenRejection(reason: .unavailable, cause: error))
        }
        return signedIn
    }

    /// Checks the signature of `request` over `body` with `session`'s key and records its
    /// nonce (the replay window).
    func verify(_ request: Request, body: [UInt8], scheme: String, session: AuthSession)
        async throws(APIError) -> SignedIn
    {
        let now = clock.now()
        let target = "\(scheme)://\(request.head.authority ?? "")\(request.uri.string)"
        let headers = SignedRequestHeaders { name in
            guard let field = HTTPField.Name(name) else { return nil }
            let values = request.headers[values: field]
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
        do {
            _ = try await verifier.verify(
                method: request.method.rawValue,
                targetURI: target,
                headers: headers,
                body: body,
                key: session.signingKey,
                now: now
            )
        } catch {
            throw APIError.auth(
                error.problem,
                headers: error.problem.status == 503 ? [(.retryAfter, "1")] : []
            )
        }
        return SignedIn(
            subject: session.subject,
            sessionID: session.id,
            keyID: session.signingKey.id
        )
    }

    /// Opens a session for a user whose password was checked.
    func issue(subject: String) async throws(APIError) -> TokenResponse {
        let now = clock.now()
        do {
            return try await issuer.issue(subject: subject, now: now)
        } catch {
            throw APIError.auth(error.problem, headers: [(.retryAfter, "1")])
        }
    }

    /// Exchanges a refresh token.
    func refresh(_ token: String) async throws(APIError) -> TokenResponse {
        let now = clock.now()
        do {
            return try await issuer.refresh(refreshToken: token, now: now)
        } catch {
            throw APIError.auth(
                error.grantProblem,
                headers: error.isTransient ? [(.retryAfter, "1")] : []
            )
        }
    }

    /// Revokes the session of `token` if it belongs to `subject` (RFC 7009: a client revokes
    /// its own tokens; others are ignored like unknown ones).
    func revoke(token: String, subject: String) async throws {
        let now = clock.now()
        guard let record = try await sessions.token(digest: TokenIssuer.digest(token)),
            let session = try await sessions.session(id: record.sessionID),
            session.subject == subject
        else { return }
        try await sessions.revoke(sessionID: session.id, at: now)
        logger.info("session revoked", metadata: ["session": "\(session.id)"])
    }

    /// Drops expired nonces and tokens (by the database's clock).
    func purge() async throws {
        let now = clock.now()
        try await nonces.purge(now: Int64(now.timeIntervalSince1970))
        try await sessions.purge(expiredBefore: now)
    }
}
