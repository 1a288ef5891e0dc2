public import Foundation
internal import Glibc
internal import Plumbing

/// What a sign-in leaves on disk: tokens and the session's signing key.
///
/// `description` never shows a token or the key.
public struct StoredCredentials: Codable, Sendable, Equatable {
    /// The bearer access token.
    public var accessToken: String
    /// The refresh token.
    public var refreshToken: String
    /// When the access token expires (client clock).
    public var expiresAt: Date
    /// The signing key id.
    public var signingKeyID: String
    /// The signing key secret, base64.
    public var signingKey: String
    /// The server that issued them.
    public var serverURL: String
    /// The user name that signed in (not secret; shown by apps).
    public var username: String?
    /// The access token's lifetime as issued (`expires_in`), in seconds.
    public var lifetime: TimeInterval?

    /// Whether the access token should be refreshed now: it expires within `margin`
    /// (capped at half its lifetime, so a short-lived token is not refreshed on every call).
    public func needsRefresh(now: Date, margin: TimeInterval) -> Bool {
        let effective = lifetime.map { min(margin, $0 / 2) } ?? margin
        return expiresAt.timeIntervalSince(now) <= effective
    }

    /// The key to sign with.
    public func makeSigningKey() throws(AuthError) -> SigningKey {
        guard let secret = Base64.decode(signingKey) else {
            throw AuthError(
                .signInRequired,
                "stored signing key '\(signingKeyID)' is not base64; sign in again"
            )
        }
        return try SigningKey(id: signingKeyID, secret: secret)
    }
}

/// The token file and the refresh lease in a suite container, shared by every suite app.
///
/// The file `auth-token.json` is written `0600` through a temporary file and `rename`, so a
/// reader sees the old or the new credentials, never a mix. The refresh lease
/// (`auth-refresh.lease`) names its holder and an expiry no later than the holder's refresh
/// deadline; a lease past its expiry is taken over, so a stopped or dead holder never
/// blocks the others. Creating or taking over the lease happens under a `flock` held for
/// microseconds (never across the network call), and the kernel drops it if a process dies.
public final class TokenStore: Sendable {
    /// The container directory.
    public let directory: URL
    /// The token file.
    public var fileURL: URL { directory.appendingPathComponent("auth-token.json") }
    var leasePath: String { directory.appendingPathComponent("auth-refresh.lease").path }
    var guardPath: String { directory.appendingPathComponent("auth-refresh.lock").path }

    /// A store in a directory that exists and only this user can write.
    public init(directory: URL) {
        self.directory = directory
    }

    /// The store in a suite's container (`SHOPFLOOR_HOME`, else `$XDG_DATA_HOME/shopfloor`,
    /// else `~/.local/share/shopfloor`), created `0700` by Plumbing's `SuiteContainer`.
    /// - Parameters:
    ///   - suite: the suite name; by default `SHOPFLOOR_SUITE`, else `shopfloor`.
    ///   - root: the containers' root; by default from the environment.
    public static func suite(_ suite: String? = nil, root: URL? = nil) throws(AuthError)
        -> TokenStore
    {
        do {
            let name = suite ?? SuiteContainer.defaultSuiteName()
            return TokenStore(
                directory: try SuiteContainer.containerURL(forSuite: name, root: root)
            )
        } catch {
            throw AuthError(
                .tokenStore,
                "cannot open the suite container: \(error.message)",
                cause: error
            )
        }
    }

    /// Reads the credentials; `nil` when nobody is signed in.
    /// - Throws: ``AuthError`` `tokenStore` when the file exists but cannot be read;
    ///   `signInRequired` when it is damaged (nothing in it can be used: sign in again).
    public func load() throws(AuthError) -> StoredCredentials? {
        let path = fileURL.path
        let data: Data
        do {
            data = try Data(contentsOf: fileURL)
        } catch {
            if access(path, F_OK) != 0 && errno == ENOENT { return nil }
            throw AuthError(.tokenStore, "cannot read token file \(path)", cause: error)
        }
        do {
            return try JSONDecoder().decode(StoredCredentials.self, from: data)
        } catch {
            throw AuthError(.signInRequired, "token file \(path) is damaged; sign in again")
        }
    }

    /// A cheap change stamp of the token file (inode, size, mtime), `nil` when absent.
    func stamp() -> FileStamp? {
        FileIdentity(path: fileURL.path)
    }

    /// Writes the credentials atomically, `0600`.
    public func save(_ credentials: StoredCredentials) throws(AuthError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(credentials) else {
            throw AuthError(.tokenStore, "cannot encode credentials")
        }
        do {
            // Atomic and durable, 0600 whatever the umask: Plumbing's one file writer.
            try FileIO.replaceFile(atPath: fileURL.path, with: data, permissions: 0o600)
        } catch {
            throw AuthError(.tokenStore, "cannot write the credentials: \(error)")
        }
    }

    /// Makes a rename or unlink in the container durable (fsync of the directory), so a
    /// crash right after sign-in, refresh or sign-out cannot bring the old file back.
    private func syncDirectory() throws(AuthError) {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.system("cannot open", directory.path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Self.system("cannot sync", directory.path) }
    }

    /// Removes the credentials (sign-out for every app of the suite).
    public func remove() throws(AuthError) {
        if unlink(fileURL.path) != 0 {
            guard errno == ENOENT else { throw Self.system("cannot remove", fileURL.path) }
            return
        }
        try syncDirectory()
    }

    // MARK: Refresh lease

    /// A held refresh lease.
    struct Lease: Sendable {
        var owner: String
        var expiresAt: Date
    }

    /// Tries once to take the lease for `duration`; `nil` when another live holder has it.
    func tryAcquireLease(duration: TimeInterval, now: Date = Date()) async throws(AuthError)
        -> Lease?
    {
        try await withGuard { () throws(AuthError) -> Lease? in
            if let current = readLease(), current.expiresAt > now { return nil }
            let lease = Lease(owner: "\(getpid())-\(UUID().uuidString)", expiresAt: now + duration)
            let text =
                "\(lease.owner) \(Int64((lease.expiresAt.timeIntervalSince1970 * 1000).rounded()))\n"
            do {
                // Whole or absent, never flushed: a lease lost in a crash has expired anyway.
                try FileIO.replaceFile(
                    atPath: leasePath,
                    with: Array(text.utf8),
                    permissions: 0o600,
                    durable: false
                )
            } catch {
                throw AuthError(.tokenStore, "cannot write the refresh lease: \(error)")
            }
            return lease
        }
    }

    /// Gives the lease back if this holder still has it.
    func releaseLease(_ lease: Lease) async {
        _ = try? await withGuard { () throws(AuthError) in
            if let current = readLease(), current.owner == lease.owner { unlink(leasePath) }
        }
    }

    private func readLease() -> Lease? {
        guard let data = FileManager.default.contents(atPath: leasePath),
            let text = String(data: data, encoding: .utf8)
        else { return nil }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard parts.count == 2, let millis = Int64(parts[1]) else {
            return Lease(owner: "", expiresAt: .distantPast)  // damaged: treat as expired
        }
        return Lease(
            owner: String(parts[0]),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(millis) / 1000)
        )
    }

    /// Runs `body` under an exclusive `flock` of the guard file. The lock is only ever held
    /// for a few file operations; a dead holder's lock is released by the kernel. Waiting for
    /// it suspends the task (never blocks a thread), 2 s at most (a stopped holder).
    private func withGuard<T>(_ body: () throws(AuthError) -> T) async throws(AuthError) -> T {
        let fd = open(guardPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.system("cannot open the refresh lock", guardPath) }
        defer { close(fd) }
        var attempts = 0
        // A job-control stop (SIGTSTP) is deferred while the lock is held (StopDeferral):
        // this process never stops holding it, and stops right after releasing it.
        StopDeferral.enter()
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            StopDeferral.leave()
            guard failure == EWOULDBLOCK || failure == EINTR, attempts < 2_000 else {
                throw AuthError(.tokenStore, "refresh lock \(guardPath) stayed busy")
            }
            attempts += 1
            do {
                try await Task.sleep(for: .milliseconds(1))
            } catch {
                throw AuthError(.cancelled, "waiting for the refresh lock was cancelled")
            }
            StopDeferral.enter()
        }
        defer {
            flock(fd, LOCK_UN)
            StopDeferral.leave()
        }
        return try body()
    }

    static func system(_ what: String, _ path: String) -> AuthError {
        let code = errno
        return AuthError(.tokenStore, "\(what) \(path): \(String(cString: strerror(code)))")
    }
}

/// The token file's change stamp: Plumbing's one file stamp.
typealias FileStamp = FileIdentity
