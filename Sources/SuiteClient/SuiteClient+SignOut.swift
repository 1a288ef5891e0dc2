internal import Auth
public import Foundation
internal import ImageCache

#if canImport(Glibc)
    internal import Glibc
#endif

extension SuiteClient {
    /// What sign-out achieved.
    public enum SignOutOutcome: Sendable, Equatable {
        /// Nobody was signed in.
        case notSignedIn
        /// The server revoked the session and the token file is gone.
        case revoked
        /// The token file is gone, but the server could not be told (the session lives on
        /// there until it expires); the reason for people.
        case localOnly(String)
    }

    /// Server data kept for offline use that sign-out removed from one place.
    public struct RemovedData: Sendable, Equatable {
        /// What it was, for people: `offline copies of reservations`, `product images`.
        public var what: String
        /// How many entries were removed.
        public var count: Int
    }

    /// What sign-out did: the session, and the kept server data it removed.
    public struct SignOutReport: Sendable, Equatable {
        /// The session's end.
        public var outcome: SignOutOutcome
        /// Every place of kept server data that held something, and what was removed there
        /// (empty with `keepCache`, or when nothing was kept).
        public var removed: [RemovedData]
    }

    /// The folder of product images in a suite container (ImageCache's disk cache, shared by
    /// every suite app); ProductImages opens it, sign-out empties it.
    public static func imageDirectory(in container: URL) -> URL {
        container.appendingPathComponent("images", isDirectory: true)
    }

    /// Signs every suite app out: revokes the session on the server when it can be reached
    /// (within the connect timeout), removes the token file in any case (a damaged one too),
    /// and, unless `keepCache`, removes every suite app's server data kept for offline use
    /// (each app's offline copies of responses, with customers' names, e-mails and phones,
    /// and the product images), reporting what it removed. Never blocked by a forced update.
    /// - Throws: ``SuiteClientError`` `storage` when the token file or a cache cannot be
    ///   removed.
    public func signOut(keepCache: Bool = false) async throws(SuiteClientError)
        -> SignOutReport
    {
        let outcome = try await endSession()
        let removed = keepCache ? [] : try Self.removeOfflineData(in: container)
        return SignOutReport(outcome: outcome, removed: removed)
    }

    private func endSession() async throws(SuiteClientError) -> SignOutOutcome {
        let stored: StoredCredentialsSummary?
        do throws(SuiteClientError) {
            stored = try storedSession()
        } catch {
            // A damaged token file: nothing in it can be revoked; it goes.
            do { try tokens.remove() } catch {
                throw SuiteClientError(.storage, error.message, cause: error)
            }
            return .localOnly("\(error.message); it was removed")
        }
        guard let stored else { return .notSignedIn }
        // The session is revoked where it was issued, whatever --server says now.
        if let issuer = try? ServerEndpoint(
            parsing: stored.serverURL,
            source: .stored,
            origin: "the session's server"
        ), issuer.origin != server.origin {
            var elsewhere = configuration
            elsewhere.serverOption = issuer.url.absoluteString
            elsewhere.environment["SHOPFLOOR_SERVER"] = nil
            elsewhere.deadline = max(remainingTime, .milliseconds(1))
            return try await SuiteClient(configuration: elsewhere, logger: logger).endSession()
        }
        let auth = self.auth
        let remaining = remainingTime
        var outcome = SignOutOutcome.revoked
        do throws(SuiteClientError) {
            try await raced { () throws(SuiteClientError) in
                do throws(AuthError) {
                    try await auth.logout(deadline: remaining)
                } catch {
                    throw Self.map(error, app: self.configuration.appName)
                }
            }
        } catch {
            outcome = .localOnly(error.message)
        }
        // A cancelled or failed revoke still removes the file (Auth's contract); make sure.
        do { try tokens.remove() } catch {
            throw SuiteClientError(.storage, error.message, cause: error)
        }
        return outcome
    }

    /// The stored session's server, nil when nobody is signed in.
    /// - Throws: ``SuiteClientError`` `signInRequired` for a damaged token file, `storage`
    ///   for one that cannot be read.
    private func storedSession() throws(SuiteClientError) -> StoredCredentialsSummary? {
        do throws(AuthError) {
            return try tokens.load().map { StoredCredentialsSummary(serverURL: $0.serverURL) }
        } catch {
            throw Self.map(error, app: configuration.appName)
        }
    }

    private struct StoredCredentialsSummary {
        var serverURL: String
    }

    /// Removes every suite app's kept server data in `container`: each app's offline copies
    /// (`cache/<app>/`) and the product images (`images/`); returns what held something.
    static func removeOfflineData(in container: URL) throws(SuiteClientError) -> [RemovedData] {
        var removed: [RemovedData] = []
        let caches = container.appendingPathComponent("cache", isDirectory: true)
        let apps = (try? FileManager.default.contentsOfDirectory(atPath: caches.path)) ?? []
        for app in apps.sorted() {
            var info = stat()
            let folder = caches.appendingPathComponent(app, isDirectory: true)
            guard lstat(folder.path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                continue
            }
            let cache = ResponseCache(directory: folder, logger: .init(label: "sign-out"))
            let count = try cache.removeAll()
            if count > 0 {
                removed.append(RemovedData(what: "offline copies of \(app)", count: count))
            }
        }
        let images = imageDirectory(in: container)
        var info = stat()
        if lstat(images.path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            do throws(ImageCacheError) {
                // The limit matters only to writes; emptying works with any.
                let cache = try DiskCache(directory: images, sizeLimit: 1 << 30)
                let count = try cache.statistics().entryCount
                try cache.removeAll()
                if count > 0 { removed.append(RemovedData(what: "product images", count: count)) }
            } catch {
                throw SuiteClientError(
                    .storage,
                    "cannot remove the product images in \(images.path): \(error.message)",
                    cause: error
                )
            }
        }
        return removed
    }
}
