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
}

/// Checks bearer tokens and request signatures, and issues tokens, with Auth's
/// `TokenIssuer` and `SignatureVerifier`.
final class AuthGate: Sendable {
    let issuer: TokenIssuer
    let verifier: SignatureVerifier
    let logger: Logger

    init(
        database: StoreDatabase,
        accessTokenTTL: TimeInterval,
        refreshTokenTTL: TimeInterval,
        window: Int64,
        logger: Logger
    ) {
        self.logger = logger
        issuer = TokenIssuer(
            accessTokenLifetime: accessTokenTTL,
            refreshTokenLifetime: refreshTokenTTL,
            logger: logger
        )
        verifier = SignatureVerifier(window: window, logger: logger)
    }

    /// Checks the bearer token and the signature of `request` over `body`.
    func authenticate(_ request: Request, body: [UInt8], now: Date = Date()) async throws(APIError)
        -> SignedIn
    {
        let session: AuthSession
        do {
            session = try issuer.authenticate(
                authorization: request.headers[.authorization],
                now: now
            )
        } catch {
            logger.notice("access token rejected", metadata: ["reason": "\(error.reason.rawValue)"])
            throw APIError.auth(error.problem, headers: [(.wwwAuthenticate, "Bearer")])
        }
        let scheme =
            request.headers[.forwardedProto].flatMap { $0 == "https" || $0 == "http" ? $0 : nil }
            ?? "http"
        let target = "\(scheme)://\(request.head.authority ?? "")\(request.uri.string)"
        do {
            _ = try verifier.verify(
                method: request.method.rawValue,
                targetURI: target,
                signatureInput: request.headers[.signatureInput],
                signature: request.headers[.signature],
                contentDigest: request.headers[.contentDigest],
                body: body,
                key: session.signingKey,
                now: now
            )
        } catch {
            throw APIError.auth(error.problem)
        }
        return SignedIn(
            subject: session.subject,
            sessionID: session.id,
            keyID: session.signingKey.id
        )
    }

    /// Opens a session for a user whose password was checked.
    func issue(subject: String, now: Date = Date()) async throws -> TokenResponse {
        issuer.issue(subject: subject, now: now)
    }

    /// Exchanges a refresh token.
    func refresh(_ token: String, now: Date = Date()) async throws(TokenRejection) -> TokenResponse
    {
        try issuer.refresh(refreshToken: token, now: now)
    }

    /// Revokes the session of `token` if it belongs to `subject`.
    func revoke(token: String, subject: String, now: Date = Date()) async throws {
        issuer.revoke(token: token)
    }

    /// Drops expired nonces and tokens.
    func purge(now: Date) async throws {}
}
