internal import Auth
internal import Foundation
internal import SQLKit
internal import Synchronization

/// The sessions of access tokens that passed a signed request's gate in this process, by the
/// token's digest: what a token names that never changes (its session, user and signing key)
/// and its expiry. With the key at hand, the gate checks a request's signature before any
/// statement, and records the nonce and reads the token, session and access again in one
/// statement (``TokenRecheck``) where it would otherwise run two. Whatever can change (a
/// revoked session, a removed user, a new role or store) is still read from the database for
/// every request, so it takes effect at the next request on every instance.
///
/// Only tokens that authenticated are kept, so requests with unknown tokens cannot fill it;
/// at ``capacity`` it starts again empty.
final class SessionKeyCache: Sendable {
    /// The most tokens kept.
    let capacity: Int
    private let sessions = Mutex<[String: AuthSession]>([:])

    /// An empty cache of at most `capacity` tokens.
    init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

    /// The session of the token with `digest`, unless the token has expired by `now`.
    func session(digest: String, now: Date) -> AuthSession? {
        sessions.withLock { sessions in
            guard let session = sessions[digest] else { return nil }
            guard session.accessTokenExpiresAt > now else {
                sessions[digest] = nil
                return nil
            }
            return session
        }
    }

    /// Keeps `session`, which the token with `digest` authenticated.
    func remember(_ session: AuthSession, digest: String) {
        sessions.withLock { sessions in
            if sessions[digest] == nil, sessions.count >= capacity {
                sessions.removeAll(keepingCapacity: true)
            }
            sessions[digest] = session
        }
    }

    /// Drops the token with `digest` (it was refused).
    func forget(digest: String) {
        _ = sessions.withLock { $0.removeValue(forKey: digest) }
    }

    /// How many tokens are kept.
    var count: Int { sessions.withLock { $0.count } }
}

/// Asks ``SQLNonceStore`` to read a token, its session and the session's user's access in the
/// statement that records a signed request's nonce, and keeps the rows it read (rows of
/// ``SQLSessionStore/tokenWithAccessColumns``). Bound to the task by the signature gate, so
/// concurrent requests never see each other's.
final class TokenRecheck: Sendable {
    @TaskLocal static var current: TokenRecheck?

    /// The digest of the token to read.
    let digest: String
    private let read = Mutex<[any SQLRow]?>(nil)

    init(digest: String) { self.digest = digest }

    /// The rows read with the nonce; nil when the nonce was recorded by a statement that
    /// did not read them (inside a unit of work).
    var rows: [any SQLRow]? { read.withLock { $0 } }

    func set(_ rows: [any SQLRow]) { read.withLock { $0 = rows } }
}
