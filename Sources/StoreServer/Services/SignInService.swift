internal import Auth
internal import Foundation
internal import Logging
internal import Models
internal import NIOPosix

/// Sign-in, refresh, revocation and the signed-in associate: the password check behind the
/// failure limit, the same hashing cost for unknown users as for known ones, and rehashing
/// when the stored cost is outdated.
struct SignInService: Sendable {
    let users: UserRepository
    let limiter: SignInLimiter
    let hasher: PasswordHasher
    let gate: AuthGate
    let logger: Logger

    /// Checks `password` and opens a session.
    /// - Throws: a 429 with `Retry-After` while the user name or `address` has too many
    ///   failures, a 401 for a wrong user name or password.
    func signIn(username: String, password: String, address: String, now: Date = Date())
        async throws -> TokenResponse
    {
        if let wait = try await limiter.retryAfter(username: username, address: address, now: now) {
            throw APIError(
                APIProblem(
                    type: ProblemType.rateLimited,
                    title: "Too many failed sign-ins",
                    status: 429,
                    detail:
                        "too many failed sign-ins for this user name or address; retry in \(wait) s"
                ),
                headers: [(.retryAfter, String(wait))]
            )
        }
        let user = Associate.isValidUsername(username) ? try await users.user(username) : nil
        let hasher = self.hasher
        let stored = user?.passwordHash
        // Unknown users cost the same hash as known ones, so timing does not tell them apart.
        let matches = try await NIOThreadPool.singleton.runIfActive {
            (try? hasher.verifyOrDummy(password, against: stored)) ?? false
        }
        guard let user, matches else {
            try await limiter.recordFailure(username: username, address: address, now: now)
            logger.notice(
                "sign-in refused",
                metadata: ["username": .string(String(username.prefix(64)))]
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
        try await limiter.clear(username: username)
        if hasher.needsRehash(user.passwordHash) {
            let rehashed = try await NIOThreadPool.singleton.runIfActive {
                try hasher.hash(password)
            }
            _ = try await users.setPasswordHash(user.associate.username, rehashed, now: now)
        }
        return try await gate.issue(subject: user.associate.username, now: now)
    }

    /// Exchanges a refresh token for new tokens.
    func refresh(_ token: String, now: Date = Date()) async throws -> TokenResponse {
        try await gate.refresh(token, now: now)
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
