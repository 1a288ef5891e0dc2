internal import Crypto
public import Foundation
public import Logging
internal import Synchronization

/// The token endpoint's JSON answer (`POST /v1/auth/token`), snake_case on the wire.
public struct TokenResponse: Codable, Sendable {
    /// The bearer access token.
    public var accessToken: String
    /// The refresh token (single use: each refresh returns a new one).
    public var refreshToken: String
    /// Seconds until the access token expires.
    public var expiresIn: Int
    /// Always `Bearer`.
    public var tokenType: String
    /// The session's signing key id.
    public var signingKeyID: String
    /// The session's signing key secret, base64.
    public var signingKey: String

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", refreshToken = "refresh_token", expiresIn = "expires_in"
        case tokenType = "token_type", signingKeyID = "signing_key_id", signingKey = "signing_key"
    }

    /// The JSON body.
    public func jsonData() -> Data { (try? JSONEncoder().encode(self)) ?? Data() }
}

/// A token request's grant, parsed from its `application/x-www-form-urlencoded` body.
public enum TokenGrant: Sendable {
    /// `grant_type=password&username=…&password=…`
    case password(username: String, password: String)
    /// `grant_type=refresh_token&refresh_token=…`
    case refreshToken(String)

    /// Parses a form body.
    /// - Throws: ``AuthError`` `invalidRequest` naming the missing or unknown field (never a value).
    public static func parse(formBody: some Sequence<UInt8>) throws(AuthError) -> TokenGrant {
        let fields = FormEncoding.decode(Array(formBody))
        switch fields["grant_type"] {
        case "password":
            guard let user = fields["username"], !user.isEmpty, let password = fields["password"]
            else {
                throw AuthError(.invalidRequest, "password grant needs 'username' and 'password'")
            }
            return .password(username: user, password: password)
        case "refresh_token":
            guard let token = fields["refresh_token"], !token.isEmpty else {
                throw AuthError(.invalidRequest, "refresh_token grant needs 'refresh_token'")
            }
            return .refreshToken(token)
        case nil: throw AuthError(.invalidRequest, "token request has no 'grant_type'")
        case let other?:
            throw AuthError(.invalidRequest, "unsupported grant_type '\(other.prefix(40))'")
        }
    }
}

/// `application/x-www-form-urlencoded` encoding and decoding.
public enum FormEncoding {
    /// Encodes pairs in order.
    public static func encode(_ pairs: [(String, String)]) -> Data {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        let text = pairs.map { name, value in
            "\(name)=\((value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""))"
        }.joined(separator: "&")
        return Data(text.utf8)
    }

    /// Decodes a body into a dictionary (the last value of a repeated name wins).
    public static func decode(_ body: [UInt8]) -> [String: String] {
        var result: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(
                separator: UInt8(ascii: "="),
                maxSplits: 1,
                omittingEmptySubsequences: false
            )
            guard let name = unescape(parts[0]) else { continue }
            result[name] = parts.count > 1 ? unescape(parts[1]) ?? "" : ""
        }
        return result
    }

    private static func unescape(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// A signed-in session as the server sees it.
public struct AuthSession: Sendable {
    /// Stable id of the session (not secret; log this).
    public var id: String
    /// Who signed in.
    public var subject: String
    /// The session's signing key, for ``SignatureVerifier``.
    public var signingKey: SigningKey
    /// When the access token used expires.
    public var accessTokenExpiresAt: Date

    /// A session as ``TokenIssuer/authenticate(accessToken:now:)`` returns it.
    public init(id: String, subject: String, signingKey: SigningKey, accessTokenExpiresAt: Date) {
        self.id = id
        self.subject = subject
        self.signingKey = signingKey
        self.accessTokenExpiresAt = accessTokenExpiresAt
    }
}

/// Why a bearer or refresh token was refused, or could not be checked.
public struct TokenRejection: Error, Sendable, CustomStringConvertible {
    /// The internal reason.
    public enum Reason: String, Sendable, Equatable {
        /// No `Authorization` header.
        case missing
        /// The header is not `Bearer <token>`, or the token is of the wrong kind.
        case malformed
        /// No such token (never issued, revoked with its session, or purged).
        case unknown
        /// The token's lifetime has passed.
        case expired
        /// The token's session was revoked.
        case revoked
        /// A refresh token that was already exchanged came back after the rotation grace:
        /// someone holds a copy, so the whole session was revoked (RFC 9700 §4.14.2).
        case reused
        /// The session store failed (database unreachable): nothing was decided. The server
        /// answers 503 and the client retries; it must never end the session.
        case unavailable
    }

    /// The reason.
    public var reason: Reason
    /// The store's error for ``Reason/unavailable`` (never carries a token).
    public var cause: (any Error & Sendable)?

    /// Creates a rejection.
    public init(reason: Reason, cause: (any Error & Sendable)? = nil) {
        self.reason = reason
        self.cause = cause
    }

    /// Whether the failure is temporary (the store failed), not a verdict on the token.
    public var isTransient: Bool { reason == .unavailable }

    /// The problem document for a refused access token: 401 `invalid-token` (refresh and
    /// retry), or 503 `unavailable` when the store failed.
    public var problem: ProblemDetails {
        if reason == .unavailable { return Self.unavailableProblem }
        return ProblemDetails(
            type: AuthProblemType.invalidToken,
            title: "Invalid access token",
            status: 401,
            detail: "Refresh the access token or sign in again."
        )
    }

    /// The token endpoint's answer to a refused refresh token: 400 `invalid-grant` (the
    /// client must sign in again), or 503 `unavailable` when the store failed (the client
    /// retries and keeps its session).
    public var grantProblem: ProblemDetails {
        if reason == .unavailable { return Self.unavailableProblem }
        return ProblemDetails(
            type: AuthProblemType.invalidGrant,
            title: "Refresh token refused",
            status: 400,
            detail: "The refresh token is unknown, expired, reused or revoked; sign in again."
        )
    }

    static let unavailableProblem = ProblemDetails(
        type: AuthProblemType.unavailable,
        title: "Sessions temporarily unavailable",
        status: 503,
        detail: "The session store did not answer; retry later."
    )

    /// A description without secrets.
    public var description: String {
        "token rejected: \(reason.rawValue)" + (cause.map { " (\(type(of: $0)))" } ?? "")
    }
}

/// Issues, checks, refreshes and revokes opaque tokens (server side) over a ``SessionStore``.
///
/// Tokens are 256 random bits; the store keeps only their SHA-256, so a dump of it reveals no
/// usable token. Each sign-in opens a session with its own signing key. A refresh rotates the
/// refresh token: the first exchange of a current token wins the store's compare-and-set
/// (``SessionStore/markRotated(digest:at:)``) and gets a new pair for the same session and
/// key. The same token presented again within ``rotationGrace`` of its rotation (the client
/// lost the answer, or two of its processes raced) gets a pair again: with a
/// ``rotationSecret`` the very same successor pair (derived from the token with the server's
/// secret, so no second chain is forked), without one a new pair. Presented after the grace,
/// it is a stolen copy or a replay, and the whole session is revoked (RFC 9700 §4.14.2) so
/// neither the thief nor the first user can go on with it. Access tokens stay valid until they
/// expire or their session is revoked; with a ``sessionLifetime`` no token of a session
/// outlives it, however often it is refreshed.
///
/// Store failures become ``TokenRejection/Reason/unavailable`` (answer 503), never a refusal.
public final class TokenIssuer: Sendable {
    /// Where sessions and tokens live.
    public let store: any SessionStore
    /// Lifetime of access tokens.
    public let accessTokenLifetime: TimeInterval
    /// Lifetime of refresh tokens.
    public let refreshTokenLifetime: TimeInterval
    /// How long after its rotation a refresh token is still exchanged (for a lost answer).
    public let rotationGrace: TimeInterval
    /// Expired records are purged from the store after this many issued token pairs.
    public let purgeInterval: Int
    /// The longest a session lasts from its sign-in, refreshes included (nil: no limit).
    public let sessionLifetime: TimeInterval?
    /// The server's secret that derives a refresh token's successor pair (nil: random pairs).
    let rotationSecret: SymmetricKey?
    private let logger: Logger
    private let issuedSincePurge = Mutex(0)

    /// Creates an issuer.
    /// - Parameters:
    ///   - store: sessions and tokens (default: a new ``InMemorySessionStore``).
    ///   - accessTokenLifetime: seconds (default 900).
    ///   - refreshTokenLifetime: seconds (default 30 days).
    ///   - rotationGrace: seconds a rotated refresh token is still accepted (default 30).
    ///   - purgeInterval: issued pairs between two ``SessionStore/purge(expiredBefore:)``
    ///     calls (default 1,024).
    ///   - sessionLifetime: seconds a session lasts from its sign-in (default: no limit).
    ///   - rotationSecret: at least 32 bytes the server keeps to itself (shared by every
    ///     instance); with it a refresh token exchanged twice within the grace yields the same
    ///     successor pair (default: none, a new pair).
    ///   - logger: session events at `info`, refusals at `notice`, reuse at `warning`; session
    ///     ids and subjects only, never a token.
    public init(
        store: any SessionStore = InMemorySessionStore(),
        accessTokenLifetime: TimeInterval = 900,
        refreshTokenLifetime: TimeInterval = 30 * 86_400,
        rotationGrace: TimeInterval = 30,
        purgeInterval: Int = 1_024,
        sessionLifetime: TimeInterval? = nil,
        rotationSecret: [UInt8]? = nil,
        logger: Logger
    ) {
        self.store = store
        self.sessionLifetime = sessionLifetime
        self.rotationSecret = rotationSecret.map { SymmetricKey(data: $0) }
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.rotationGrace = max(0, rotationGrace)
        self.purgeInterval = max(1, purgeInterval)
        self.logger = logger
    }

    /// Opens a session for a subject whose password was checked, and returns its tokens.
    /// - Throws: ``TokenRejection`` `unavailable` when the store fails.
    public func issue(subject: String, now: Date = Date()) async throws(TokenRejection)
        -> TokenResponse
    {
        let sessionID = Self.randomToken(bytes: 9)
        let key = SigningKey.random(id: "sk-" + sessionID)
        let session = SessionRecord(
            id: sessionID,
            subject: subject,
            signingKey: key,
            createdAt: now
        )
        let (response, records) = makeTokens(session: session, now: now)
        try await call { try await store.insert(session: session, tokens: records) }
        logger.info(
            "session opened",
            metadata: ["session": "\(sessionID)", "subject": "\(subject)"]
        )
        await purgeIfDue(now: now)
        return response
    }

    /// Exchanges a refresh token for new tokens of the same session (see the type's
    /// description for rotation, grace and reuse).
    /// - Throws: ``TokenRejection``: `unknown`, `malformed` (an access token), `expired`,
    ///   `revoked`, `reused` (the session is now revoked) → answer ``TokenRejection/grantProblem``
    ///   (400 `invalid-grant`); `unavailable` → 503.
    public func refresh(refreshToken: String, now: Date = Date()) async throws(TokenRejection)
        -> TokenResponse
    {
        do {
            return try await exchange(refreshToken, now: now)
        } catch {
            logger.notice(
                "refresh token rejected",
                metadata: ["reason": "\(error.reason.rawValue)"]
            )
            throw error
        }
    }

    private func exchange(_ refreshToken: String, now: Date) async throws(TokenRejection)
        -> TokenResponse
    {
        let digest = Self.digest(refreshToken)
        guard let record = try await call({ try await store.token(digest: digest) }) else {
            throw TokenRejection(reason: .unknown)
        }
        guard record.kind == .refresh else { throw TokenRejection(reason: .malformed) }
        guard record.expiresAt > now else { throw TokenRejection(reason: .expired) }
        guard let session = try await call({ try await store.session(id: record.sessionID) }),
            session.revokedAt == nil
        else { throw TokenRejection(reason: .revoked) }
        guard isAlive(session, now: now) else { throw TokenRejection(reason: .expired) }
        let rotatedAt = try await call { try await store.markRotated(digest: digest, at: now) }
        let sinceRotation = now.timeIntervalSince(rotatedAt)
        if sinceRotation > rotationGrace {
            try await call { try await store.revoke(sessionID: session.id, at: now) }
            logger.warning(
                "rotated refresh token reused after the grace period: session revoked",
                metadata: [
                    "session": "\(session.id)", "subject": "\(session.subject)",
                    "secondsSinceRotation": "\(Int(sinceRotation))",
                ]
            )
            throw TokenRejection(reason: .reused)
        }
        if sinceRotation > 0 {
            logger.notice(
                "rotated refresh token presented again within the grace period: pair issued again",
                metadata: ["session": "\(session.id)"]
            )
        }
        guard let rotationSecret else {
            let (response, records) = makeTokens(session: session, now: now)
            try await call { try await store.insert(tokens: records) }
            await purgeIfDue(now: now)
            return response
        }
        // The successor pair is the token's, whoever asks within the grace: one chain only.
        let successor = (
            access: Self.derive(rotationSecret, "access", refreshToken),
            refresh: Self.derive(rotationSecret, "refresh", refreshToken)
        )
        if let response = try await existingPair(successor, session: session, now: now) {
            return response
        }
        let (response, records) = makeTokens(session: session, now: now, tokens: successor)
        do {
            try await store.insert(tokens: records)
        } catch {
            // Another exchange of the same token stored the pair first.
            if let response = try await existingPair(successor, session: session, now: now) {
                return response
            }
            logger.error("session store failed", metadata: ["error": "\(type(of: error))"])
            throw TokenRejection(reason: .unavailable, cause: error)
        }
        await purgeIfDue(now: now)
        return response
    }

    /// The answer for a successor pair already stored, or nil.
    private func existingPair(
        _ tokens: (access: String, refresh: String),
        session: SessionRecord,
        now: Date
    ) async throws(TokenRejection) -> TokenResponse? {
        guard
            let access = try await call({
                try await store.token(digest: Self.digest(tokens.access))
            })
        else { return nil }
        return TokenResponse(
            accessToken: tokens.access,
            refreshToken: tokens.refresh,
            expiresIn: max(0, Int(access.expiresAt.timeIntervalSince(now))),
            tokenType: "Bearer",
            signingKeyID: session.signingKey.id,
            signingKey: session.signingKey.secretBase64
        )
    }

    /// Whether `session` is within its absolute lifetime at `now`.
    private func isAlive(_ session: SessionRecord, now: Date) -> Bool {
        guard let sessionLifetime else { return true }
        return now < session.createdAt + sessionLifetime
    }

    /// A token derived from `input` with the server's secret: 32 bytes, base64url.
    static func derive(_ secret: SymmetricKey, _ purpose: String, _ input: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("\(purpose)|\(input)".utf8),
            using: secret
        )
        let text = mac.withUnsafeBytes { Base64.encode($0) }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" })
    }

    /// Checks an `Authorization` header value (`Bearer <token>`).
    public func authenticate(authorization: String?, now: Date = Date())
        async throws(TokenRejection) -> AuthSession
    {
        try await authenticate(accessToken: Self.bearerToken(authorization), now: now)
    }

    /// The token of an `Authorization: Bearer <token>` header.
    /// - Throws: ``TokenRejection`` `missing` without a header, `malformed` for another scheme.
    public static func bearerToken(_ authorization: String?) throws(TokenRejection) -> String {
        guard let authorization else { throw TokenRejection(reason: .missing) }
        guard authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw TokenRejection(reason: .malformed)
        }
        return String(authorization.dropFirst(7))
    }

    /// Checks an access token.
    /// - Throws: ``TokenRejection`` → answer its ``TokenRejection/problem`` (401, or 503).
    public func authenticate(accessToken: String, now: Date = Date()) async throws(TokenRejection)
        -> AuthSession
    {
        let digest = Self.digest(accessToken)
        guard
            let (record, found) = try await call({
                try await store.tokenWithSession(digest: digest)
            })
        else {
            throw TokenRejection(reason: .unknown)
        }
        return try check(access: record, session: found, now: now)
    }

    /// Checks a stored access token and its session (read by the caller, as
    /// ``SessionStore/tokenWithSession(digest:)`` returns them) as ``authenticate(accessToken:now:)``
    /// does: the token's kind and lifetime, the session's revocation and lifetime.
    /// - Throws: ``TokenRejection`` → answer its ``TokenRejection/problem``.
    public func check(access record: TokenRecord, session found: SessionRecord?, now: Date)
        throws(TokenRejection) -> AuthSession
    {
        guard record.kind == .access else { throw TokenRejection(reason: .malformed) }
        guard record.expiresAt > now else { throw TokenRejection(reason: .expired) }
        guard let session = found, session.revokedAt == nil
        else { throw TokenRejection(reason: .revoked) }
        guard isAlive(session, now: now) else { throw TokenRejection(reason: .expired) }
        return AuthSession(
            id: session.id,
            subject: session.subject,
            signingKey: session.signingKey,
            accessTokenExpiresAt: record.expiresAt
        )
    }

    /// Revokes the whole session a token (access or refresh) belongs to. Unknown tokens are
    /// ignored (RFC 7009). Returns whether a session was found.
    /// - Throws: ``TokenRejection`` `unavailable` when the store fails.
    @discardableResult
    public func revoke(token: String, now: Date = Date()) async throws(TokenRejection) -> Bool {
        let digest = Self.digest(token)
        guard let record = try await call({ try await store.token(digest: digest) }) else {
            return false
        }
        try await call { try await store.revoke(sessionID: record.sessionID, at: now) }
        logger.info("session revoked", metadata: ["session": "\(record.sessionID)"])
        return true
    }

    /// Deletes expired tokens and dead sessions from the store now.
    public func purge(now: Date = Date()) async throws(TokenRejection) {
        try await call { try await store.purge(expiredBefore: now) }
    }

    private func purgeIfDue(now: Date) async {
        let due = issuedSincePurge.withLock { count in
            count += 1
            guard count >= purgeInterval else { return false }
            count = 0
            return true
        }
        guard due else { return }
        do {
            try await store.purge(expiredBefore: now)
        } catch {
            logger.notice("session store purge failed", metadata: ["error": "\(type(of: error))"])
        }
    }

    /// Runs a store operation; its failure becomes `unavailable`.
    private func call<T>(_ operation: () async throws -> T) async throws(TokenRejection) -> T {
        do {
            return try await operation()
        } catch {
            logger.error("session store failed", metadata: ["error": "\(type(of: error))"])
            throw TokenRejection(reason: .unavailable, cause: error)
        }
    }

    /// A token pair for `session` (random unless given), no token outliving the session.
    private func makeTokens(
        session: SessionRecord,
        now: Date,
        tokens: (access: String, refresh: String)? = nil
    ) -> (TokenResponse, [TokenRecord]) {
        let access = tokens?.access ?? Self.randomToken(bytes: 32)
        let refresh = tokens?.refresh ?? Self.randomToken(bytes: 32)
        let end = sessionLifetime.map { session.createdAt + $0 } ?? .distantFuture
        let accessExpiry = min(now + accessTokenLifetime, end)
        let key = session.signingKey
        let records = [
            TokenRecord(
                digest: Self.digest(access),
                sessionID: session.id,
                kind: .access,
                expiresAt: accessExpiry
            ),
            TokenRecord(
                digest: Self.digest(refresh),
                sessionID: session.id,
                kind: .refresh,
                expiresAt: min(now + refreshTokenLifetime, end)
            ),
        ]
        let response = TokenResponse(
            accessToken: access,
            refreshToken: refresh,
            expiresIn: max(0, Int(accessExpiry.timeIntervalSince(now).rounded(.down))),
            tokenType: "Bearer",
            signingKeyID: key.id,
            signingKey: key.secretBase64
        )
        return (response, records)
    }

    static func randomToken(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var text = Base64.encode(bytes)
        text = String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" })
        return text
    }

    /// The store's key for a token: base64 of its SHA-256.
    public static func digest(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).withUnsafeBytes { Base64.encode($0) }
    }
}
