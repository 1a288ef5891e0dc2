internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Logging
internal import Models

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
            if !error.isTransient {
                logger.notice(
                    "access token rejected",
                    metadata: ["reason": "\(error.reason.rawValue)"]
                )
            }
            throw APIError.auth(
                error.problem,
                headers: error.isTransient ? [(.retryAfter, "1")] : [(.wwwAuthenticate, "Bearer")]
            )
        }
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
