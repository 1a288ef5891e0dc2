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
}

/// Why a bearer or refresh token was refused.
public struct TokenRejection: Error, Sendable, CustomStringConvertible {
    /// The internal reason.
    public enum Reason: String, Sendable { case missing, malformed, unknown, expired, revoked }
    /// The reason.
    public var reason: Reason

    /// Creates a rejection.
    public init(reason: Reason) { self.reason = reason }

    /// The 401 problem document for a refused access token.
    public var problem: ProblemDetails {
        ProblemDetails(
            type: AuthProblemType.invalidToken,
            title: "Invalid access token",
            status: 401,
            detail: "Refresh the access token or sign in again."
        )
    }

    /// A description without secrets.
    public var description: String { "token rejected: \(reason.rawValue)" }
}

/// Issues, checks, refreshes and revokes opaque tokens (server side, in memory).
///
/// Tokens are 256 random bits; only their SHA-256 is kept, so a dump of the table reveals no
/// usable token. Each sign-in opens a session with its own signing key; a refresh rotates the
/// refresh token (the used one stops working) and issues a new access token for the same
/// session and key; access tokens stay valid until they expire or the session is revoked.
public final class TokenIssuer: Sendable {
    /// Lifetime of access tokens.
    public let accessTokenLifetime: TimeInterval
    /// Lifetime of refresh tokens.
    public let refreshTokenLifetime: TimeInterval
    private let logger: Logger
    private let state = Mutex(State())

    private struct Record { var sessionID: String; var expiresAt: Date; var isRefresh: Bool }
    private struct Session { var subject: String; var key: SigningKey; var revoked = false }
    private struct State {
        var tokens: [String: Record] = [:]
        var sessions: [String: Session] = [:]
        var issuedSincePurge = 0
    }

    /// Creates an issuer.
    public init(
        accessTokenLifetime: TimeInterval = 900,
        refreshTokenLifetime: TimeInterval = 30 * 86_400,
        logger: Logger
    ) {
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.logger = logger
    }

    /// Opens a session for a subject whose password was checked, and returns its tokens.
    public func issue(subject: String, now: Date = Date()) -> TokenResponse {
        let sessionID = Self.randomToken(bytes: 9)
        let key = SigningKey.random(id: "sk-" + sessionID)
        let response = state.withLock { state in
            state.sessions[sessionID] = Session(subject: subject, key: key)
            return makeTokens(sessionID: sessionID, key: key, now: now, state: &state)
        }
        logger.info(
            "session opened",
            metadata: ["session": "\(sessionID)", "subject": "\(subject)"]
        )
        return response
    }

    /// Exchanges a refresh token for new tokens of the same session.
    public func refresh(refreshToken: String, now: Date = Date()) throws(TokenRejection)
        -> TokenResponse
    {
        let digest = Self.digest(refreshToken)
        let result: Result<TokenResponse, TokenRejection> = state.withLock { state in
            guard let record = state.tokens[digest], record.isRefresh else {
                return .failure(TokenRejection(reason: .unknown))
            }
            guard let session = state.sessions[record.sessionID], !session.revoked else {
                return .failure(TokenRejection(reason: .revoked))
            }
            guard record.expiresAt > now else { return .failure(TokenRejection(reason: .expired)) }
            state.tokens[digest] = nil
            return .success(
                makeTokens(sessionID: record.sessionID, key: session.key, now: now, state: &state)
            )
        }
        switch result {
        case .success(let tokens): return tokens
        case .failure(let rejection):
            logger.notice(
                "refresh token rejected",
                metadata: ["reason": "\(rejection.reason.rawValue)"]
            )
            throw rejection
        }
    }

    /// Checks an `Authorization` header value (`Bearer <token>`).
    public func authenticate(authorization: String?, now: Date = Date()) throws(TokenRejection)
        -> AuthSession
    {
        guard let authorization else { throw TokenRejection(reason: .missing) }
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw TokenRejection(reason: .malformed)
        }
        return try authenticate(accessToken: String(authorization.dropFirst(7)), now: now)
    }

    /// Checks an access token.
    public func authenticate(accessToken: String, now: Date = Date()) throws(TokenRejection)
        -> AuthSession
    {
        let digest = Self.digest(accessToken)
        let result: Result<AuthSession, TokenRejection> = state.withLock { state in
            guard let record = state.tokens[digest], !record.isRefresh else {
                return .failure(TokenRejection(reason: .unknown))
            }
            guard let session = state.sessions[record.sessionID], !session.revoked else {
                return .failure(TokenRejection(reason: .revoked))
            }
            guard record.expiresAt > now else { return .failure(TokenRejection(reason: .expired)) }
            return .success(
                AuthSession(
                    id: record.sessionID,
                    subject: session.subject,
                    signingKey: session.key,
                    accessTokenExpiresAt: record.expiresAt
                )
            )
        }
        return try result.get()
    }

    /// Revokes the whole session a token (access or refresh) belongs to. Unknown tokens are
    /// ignored (RFC 7009). Returns whether a session was revoked.
    @discardableResult
    public func revoke(token: String) -> Bool {
        let digest = Self.digest(token)
        let sessionID: String? = state.withLock { state in
            guard let record = state.tokens[digest] else { return nil }
            state.sessions[record.sessionID]?.revoked = true
            state.tokens = state.tokens.filter { $0.value.sessionID != record.sessionID }
            return record.sessionID
        }
        if let sessionID { logger.info("session revoked", metadata: ["session": "\(sessionID)"]) }
        return sessionID != nil
    }

    private func makeTokens(sessionID: String, key: SigningKey, now: Date, state: inout State)
        -> TokenResponse
    {
        let access = Self.randomToken(bytes: 32)
        let refresh = Self.randomToken(bytes: 32)
        state.tokens[Self.digest(access)] = Record(
            sessionID: sessionID,
            expiresAt: now + accessTokenLifetime,
            isRefresh: false
        )
        state.tokens[Self.digest(refresh)] = Record(
            sessionID: sessionID,
            expiresAt: now + refreshTokenLifetime,
            isRefresh: true
        )
        state.issuedSincePurge += 1
        if state.issuedSincePurge >= 1024 {
            state.issuedSincePurge = 0
            state.tokens = state.tokens.filter { $0.value.expiresAt > now }
        }
        return TokenResponse(
            accessToken: access,
            refreshToken: refresh,
            expiresIn: Int(accessTokenLifetime),
            tokenType: "Bearer",
            signingKeyID: key.id,
            signingKey: key.secretBase64
        )
    }

    static func randomToken(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var text = Base64.encode(bytes)
        text = String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" })
        return text
    }

    static func digest(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).withUnsafeBytes { Base64.encode($0) }
    }
}
