internal import Auth
internal import Foundation
internal import Logging
internal import Metrics
internal import Models
internal import NIOPosix

/// Sign-in, refresh, revocation and the signed-in associate.
///
/// A password is checked only when the attempt gets a hashing permit (``LoadLimiter``: a few
/// per user and per address at once, a few more in all; refused at once with 429, or 503 when
/// the whole process is busy) and then a reservation in the database (``SignInLimiter``: 429
/// with `Retry-After` once the user's or the address's failures are used up). Unknown users cost
/// the same hash as known ones; an outdated hash cost is renewed on success.
struct SignInService: Sendable {
    let users: UserRepository
    let limiter: SignInLimiter
    let hashing: LoadLimiter
    let hasher: PasswordHasher
    let gate: AuthGate
    let logger: Logger

    /// Checks `password` and opens a session.
    /// - Throws: a 429 (or 503) with `Retry-After` while the user name or `address` has too many
    ///   attempts at once or too many failures, a 401 for a wrong user name or password.
    func signIn(username: String, password: String, address: String, now: Date? = nil)
        async throws -> TokenResponse
    {
        // The database's clock: every instance counts failures in the same windows.
        let now = now ?? gate.clock.now()
        do {
            return try await hashing.withPermit(
                for: ["user": username.lowercased(), "address": address]
            ) {
                let attempt = try await limiter.reserve(
                    username: username,
                    address: address,
                    now: now
                )
                let user =
                    Associate.isValidUsername(username) ? try await users.user(username) : nil
                let hasher = self.hasher
                let stored = user?.passwordHash
                Counter(label: "store_server_password_checks_total").increment()
                let matches = try await NIOThreadPool.singleton.runIfActive {
                    (try? hasher.verifyOrDummy(password, against: stored)) ?? false
                }
                guard let user, matches else {
                    try await limiter.finish(attempt, succeeded: false, now: now)
                    // Only a user that exists is named: what was typed into the user-name
                    // field may be a password, or a line break that forges a log line.
                    logger.notice(
                        "sign-in refused",
                        metadata: [
                            "username": user.map { .string($0.associate.username) }
                                ?? "(unknown user)"
                        ]
                    )
                    throw APIError.auth(
                        ProblemDetails(
                            type: AuthProblemType.invalidCredentials,
                            title: "Wrong user name or password",
                            status: 401,
                            detail: "The user name or password is wrong."
                        )
                    )
                }
                try await limiter.finish(attempt, succeeded: true, now: now)
                if hasher.needsRehash(user.passwordHash) {
                    let rehashed = try await NIOThreadPool.singleton.runIfActive {
                        try hasher.hash(password)
                    }
                    _ = try await users.setPasswordHash(user.associate.username, rehashed, now: now)
                }
                return try await gate.issue(subject: user.associate.username)
            }
        } catch let refusal as LoadLimiter.Refusal {
            logger.notice(
                "sign-in refused: \(refusal)",
                metadata: ["address": .string(address)]
            )
            throw APIError(
                APIProblem(
                    type: refusal.isOverloaded ? ProblemType.unavailable : ProblemType.rateLimited,
                    title: refusal.isOverloaded
                        ? "Service unavailable" : "Too many sign-ins at once",
                    status: refusal.isOverloaded ? 503 : 429,
                    detail: "\(refusal); retry in \(refusal.retryAfter) s"
                ),
                headers: [(.retryAfter, String(refusal.retryAfter))]
            )
        } catch let refused as SignInLimiter.Refused {
            throw APIError(
                APIProblem(
                    type: ProblemType.rateLimited,
                    title: "Too many failed sign-ins",
                    status: 429,
                    detail:
                        "too many failed sign-ins for this user name or address; retry in \(refused.seconds) s"
                ),
                headers: [(.retryAfter, String(refused.seconds))]
            )
        }
    }

    /// Exchanges a refresh token for new tokens.
    func refresh(_ token: String) async throws -> TokenResponse {
        try await gate.refresh(token)
    }

    /// Revokes the session of `token` when it is the caller's (RFC 7009: others are ignored).
    func revoke(_ token: String, by caller: SignedIn) async throws {
        try await gate.revoke(token: token, subject: caller.subject)
    }

    /// The signed-in associate.
    /// - Throws: a 404 when the user was removed meanwhile.
    func associate(_ caller: SignedIn) async throws -> Associate {
        guard let user = try await users.user(caller.subject) else {
            throw APIError.notFound("user \(caller.subject) no longer exists")
        }
        return user.associate
    }
}
