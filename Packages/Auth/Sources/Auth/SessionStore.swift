public import Foundation
internal import Synchronization

/// A signed-in session as a ``SessionStore`` keeps it: who, and the session's HMAC signing
/// key (the secret must be stored: the verifier needs it for every request).
///
/// Prints and dumps without the key's secret.
public struct SessionRecord: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Stable id of the session (not secret; logged).
    public var id: String
    /// Who signed in.
    public var subject: String
    /// The session's signing key (its id is `sk-<session id>`).
    public var signingKey: SigningKey
    /// When the session was opened.
    public var createdAt: Date
    /// When the session was revoked (sign-out, or reuse of a rotated refresh token);
    /// `nil` while it is valid.
    public var revokedAt: Date?

    /// Creates a record.
    public init(
        id: String,
        subject: String,
        signingKey: SigningKey,
        createdAt: Date,
        revokedAt: Date? = nil
    ) {
        self.id = id
        self.subject = subject
        self.signingKey = signingKey
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// A description without the key's secret.
    public var description: String {
        "SessionRecord(id: \(id), subject: \(subject), signingKey: \(signingKey), createdAt: \(createdAt), revokedAt: \(revokedAt.map { "\($0)" } ?? "nil"))"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// A mirror without the key's secret (for `dump`).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "subject": subject, "signingKey": signingKey, "createdAt": createdAt,
                "revokedAt": revokedAt as Any,
            ],
            displayStyle: .struct
        )
    }
}

/// A token as a ``SessionStore`` keeps it: by the SHA-256 of its value (base64), so a copy of
/// the table yields no usable token.
public struct TokenRecord: Sendable, Equatable {
    /// What the token is for.
    public enum Kind: String, Sendable, Equatable {
        /// A bearer access token.
        case access
        /// A refresh token (exchanged at the token endpoint).
        case refresh
    }

    /// Base64 of the SHA-256 of the token's value (the lookup key; not the token).
    public var digest: String
    /// The session it belongs to.
    public var sessionID: String
    /// Access or refresh.
    public var kind: Kind
    /// When it stops being accepted.
    public var expiresAt: Date
    /// Refresh tokens: when it was exchanged for a new pair (`nil` while it is the current
    /// one). Kept until `expiresAt` so a later reuse is recognised.
    public var rotatedAt: Date?

    /// Creates a record.
    public init(
        digest: String,
        sessionID: String,
        kind: Kind,
        expiresAt: Date,
        rotatedAt: Date? = nil
    ) {
        self.digest = digest
        self.sessionID = sessionID
        self.kind = kind
        self.expiresAt = expiresAt
        self.rotatedAt = rotatedAt
    }
}

/// An error of ``InMemorySessionStore`` (a SQL store throws its driver's errors).
public struct SessionStoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable {
        case duplicateSession, duplicateToken, unknownSession, unknownToken
    }
    /// What went wrong.
    public var code: Code
    /// A message naming the session id (never a token).
    public var message: String
    /// The description.
    public var description: String { message }
}

/// Where a ``TokenIssuer`` keeps sessions and tokens.
///
/// Implementations: ``InMemorySessionStore`` (one process), and store-server's SQL store
/// (SQLite for one instance, PostgreSQL shared by several), so that sessions survive a restart
/// and every instance sees one rotation and one revocation.
///
/// ## Contract
/// Every method is one atomic operation (one statement or one transaction); the issuer never
/// relies on a read and a later write being atomic together, except through
/// ``markRotated(digest:at:)``, which is the compare-and-set that makes rotation safe across
/// processes. Errors (database unreachable) are thrown; the issuer turns them into
/// ``TokenRejection/Reason/unavailable`` (a 503), never into a refusal that signs a user out.
public protocol SessionStore: Sendable {
    /// Stores a new session and its first tokens, all or nothing.
    /// - Throws: when the session id or a digest already exists (never overwrites).
    func insert(session: SessionRecord, tokens: [TokenRecord]) async throws

    /// Stores new tokens of an existing session, all or nothing.
    /// - Throws: when a digest already exists.
    func insert(tokens: [TokenRecord]) async throws

    /// The session with this id, revoked or not; `nil` when unknown or purged.
    func session(id: String) async throws -> SessionRecord?

    /// The token with this digest; `nil` when unknown or purged. After
    /// ``revoke(sessionID:at:)`` the session's tokens may still be returned or not: the issuer
    /// checks the session's `revokedAt` either way.
    func token(digest: String) async throws -> TokenRecord?

    /// Marks refresh token `digest` rotated at `now` unless it already is, and returns the
    /// rotation time that holds afterwards: `now` when this call rotated it, the earlier time
    /// when another call (in any process) did. Compare-and-set, atomic across processes:
    /// `UPDATE tokens SET rotated_at = $now WHERE digest = $d AND rotated_at IS NULL`, then
    /// read `rotated_at` (or `… RETURNING`); of concurrent callers exactly one sets it.
    /// - Throws: when no such token exists.
    func markRotated(digest: String, at now: Date) async throws -> Date

    /// Revokes the session (sets `revokedAt` if not set) and so every token of it.
    /// Revoking an unknown or revoked session does nothing.
    func revoke(sessionID: String, at now: Date) async throws

    /// Housekeeping: deletes tokens whose `expiresAt` is before `date`, and sessions left
    /// without tokens (revoked ones included).
    func purge(expiredBefore date: Date) async throws

    /// The token with this digest and its session (nil when the session is unknown), or nil
    /// when the token is unknown: what ``token(digest:)`` then ``session(id:)`` return, in
    /// one read where the store can (a SQL join: one round trip per signed request instead of
    /// two). The default implementation makes the two calls.
    func tokenWithSession(digest: String) async throws -> (TokenRecord, SessionRecord?)?
}

extension SessionStore {
    /// ``token(digest:)``, then ``session(id:)`` of its session.
    public func tokenWithSession(digest: String) async throws -> (TokenRecord, SessionRecord?)? {
        guard let token = try await token(digest: digest) else { return nil }
        return (token, try await session(id: token.sessionID))
    }
}

/// Sessions and tokens in process memory (one server process; lost on restart).
public final class InMemorySessionStore: SessionStore {
    private struct State {
        var sessions: [String: SessionRecord] = [:]
        var tokens: [String: TokenRecord] = [:]
        var bySession: [String: Set<String>] = [:]
    }
    private let state = Mutex(State())

    /// Creates an empty store.
    public init() {}

    /// See ``SessionStore/insert(session:tokens:)``.
    public func insert(session: SessionRecord, tokens: [TokenRecord]) async throws {
        try state.withLock { state throws(SessionStoreError) in
            guard state.sessions[session.id] == nil else {
                throw SessionStoreError(
                    code: .duplicateSession,
                    message: "session \(session.id) already exists"
                )
            }
            try Self.checkNew(tokens, in: state, newSession: session.id)
            state.sessions[session.id] = session
            Self.add(tokens, to: &state)
        }
    }

    /// See ``SessionStore/insert(tokens:)``.
    public func insert(tokens: [TokenRecord]) async throws {
        try state.withLock { state throws(SessionStoreError) in
            try Self.checkNew(tokens, in: state)
            Self.add(tokens, to: &state)
        }
    }

    /// See ``SessionStore/session(id:)``.
    public func session(id: String) async throws -> SessionRecord? {
        state.withLock { $0.sessions[id] }
    }

    /// See ``SessionStore/token(digest:)``.
    public func token(digest: String) async throws -> TokenRecord? {
        state.withLock { $0.tokens[digest] }
    }

    /// See ``SessionStore/markRotated(digest:at:)``.
    public func markRotated(digest: String, at now: Date) async throws -> Date {
        try state.withLock { state throws(SessionStoreError) in
            guard var record = state.tokens[digest] else {
                throw SessionStoreError(code: .unknownToken, message: "no such refresh token")
            }
            if let rotated = record.rotatedAt { return rotated }
            record.rotatedAt = now
            state.tokens[digest] = record
            return now
        }
    }

    /// See ``SessionStore/revoke(sessionID:at:)``. Also forgets the session's tokens.
    public func revoke(sessionID: String, at now: Date) async throws {
        state.withLock { state in
            guard state.sessions[sessionID] != nil else { return }
            if state.sessions[sessionID]?.revokedAt == nil {
                state.sessions[sessionID]?.revokedAt = now
            }
            for digest in state.bySession[sessionID] ?? [] { state.tokens[digest] = nil }
            state.bySession[sessionID] = []
        }
    }

    /// See ``SessionStore/purge(expiredBefore:)``.
    public func purge(expiredBefore date: Date) async throws {
        state.withLock { state in
            for (digest, record) in state.tokens where record.expiresAt < date {
                state.tokens[digest] = nil
                state.bySession[record.sessionID]?.remove(digest)
            }
            for (id, digests) in state.bySession where digests.isEmpty {
                state.bySession[id] = nil
                state.sessions[id] = nil
            }
        }
    }

    /// Sessions and tokens held (for monitoring and tests).
    public var counts: (sessions: Int, tokens: Int) {
        state.withLock { ($0.sessions.count, $0.tokens.count) }
    }

    private static func checkNew(
        _ tokens: [TokenRecord],
        in state: State,
        newSession: String? = nil
    ) throws(SessionStoreError) {
        for token in tokens {
            guard state.tokens[token.digest] == nil else {
                throw SessionStoreError(
                    code: .duplicateToken,
                    message: "a token of session \(token.sessionID) already exists"
                )
            }
            guard token.sessionID == newSession || state.sessions[token.sessionID] != nil else {
                throw SessionStoreError(
                    code: .unknownSession,
                    message: "no session \(token.sessionID) for a new token"
                )
            }
        }
    }

    private static func add(_ tokens: [TokenRecord], to state: inout State) {
        for token in tokens {
            state.tokens[token.digest] = token
            state.bySession[token.sessionID, default: []].insert(token.digest)
        }
    }
}
