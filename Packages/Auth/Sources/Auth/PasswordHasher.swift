internal import Crypto
internal import Foundation
internal import _CryptoExtras

/// Hashes and checks passwords with PBKDF2-HMAC-SHA256 (from `_CryptoExtras`).
///
/// The encoded form describes itself in the PHC string style, so the cost can be raised
/// later without breaking stored hashes:
/// `$pbkdf2-sha256$i=600000$<salt, base64 without padding>$<32-byte hash, base64>`.
///
/// ```swift
/// let hasher = PasswordHasher()                  // 600,000 iterations (OWASP 2023)
/// let stored = try hasher.hash("correct horse")
/// try hasher.verify("correct horse", against: stored)   // true
/// hasher.needsRehash(stored)                     // false until the cost is raised
/// // Unknown user: spend the same time as for a known one, then refuse.
/// try hasher.verifyOrDummy(password, against: storedHashOfUser)  // storedHashOfUser: String?
/// ```
///
/// Deriving costs about as much CPU as the iterations say (600,000 ≈ a few hundred ms):
/// run it off latency-sensitive executors and rate-limit sign-ins.
public struct PasswordHasher: Sendable {
    /// The lowest cost ``init(iterations:)`` accepts (OWASP's floor for PBKDF2-HMAC-SHA256
    /// is 600,000; 100,000 leaves room for slow devices, never less).
    public static let minimumIterations = 100_000

    /// PBKDF2 iterations for new hashes (the cost parameter); fixed for the hasher's life.
    public let iterations: Int

    /// Creates a hasher.
    /// - Parameter iterations: the cost (default 600,000); values under
    ///   ``minimumIterations`` are raised to it.
    public init(iterations: Int = 600_000) {
        self.iterations = max(Self.minimumIterations, iterations)
    }

    private init(unchecked iterations: Int) {
        self.iterations = max(1, iterations)
    }

    /// A hasher below the cost floor, for tests only (a low cost makes hashes cheap to crack).
    public static func insecureForTesting(iterations: Int) -> PasswordHasher {
        PasswordHasher(unchecked: iterations)
    }

    /// Hashes a password with a new random 16-byte salt.
    public func hash(_ password: String) throws(AuthError) -> String {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        let derived = try derive(password, salt: salt, iterations: iterations)
        return "$pbkdf2-sha256$i=\(iterations)$\(Self.unpadded(salt))$\(Self.unpadded(derived))"
    }

    /// Checks a password against an encoded hash, in constant time for the comparison.
    /// - Throws: ``AuthError`` `invalidPasswordHash` when `encoded` is not one of ours.
    public func verify(_ password: String, against encoded: String) throws(AuthError) -> Bool {
        let parsed = try Self.parse(encoded)
        let derived = try derive(password, salt: parsed.salt, iterations: parsed.iterations)
        guard derived.count == parsed.hash.count else { return false }
        // SymmetricKey's == is swift-crypto's constant-time comparison.
        return SymmetricKey(data: derived) == SymmetricKey(data: parsed.hash)
    }

    /// Checks a password against a user's stored hash, or — when there is no such user
    /// (`encoded` is `nil`) — derives a hash at this hasher's cost anyway and answers `false`,
    /// so a sign-in for an unknown user takes as long as one for a known user and timing
    /// does not tell who exists.
    /// - Throws: ``AuthError`` `invalidPasswordHash` when `encoded` is not one of ours.
    public func verifyOrDummy(_ password: String, against encoded: String?) throws(AuthError)
        -> Bool
    {
        guard let encoded else {
            _ = try derive(password, salt: Self.dummySalt, iterations: iterations)
            return false
        }
        return try verify(password, against: encoded)
    }

    private static let dummySalt: [UInt8] = Array("shopfloor-dummy!".utf8)

    /// Whether a stored hash uses a lower cost than this hasher (rehash after a good sign-in).
    public func needsRehash(_ encoded: String) -> Bool {
        guard let parsed = try? Self.parse(encoded) else { return true }
        return parsed.iterations < iterations
    }

    private func derive(_ password: String, salt: [UInt8], iterations: Int) throws(AuthError)
        -> [UInt8]
    {
        do {
            let key = try KDF.Insecure.PBKDF2.deriveKey(
                from: Array(password.utf8),
                salt: salt,
                using: .sha256,
                outputByteCount: 32,
                unsafeUncheckedRounds: iterations
            )
            return key.withUnsafeBytes { Array($0) }
        } catch {
            throw AuthError(
                .invalidPasswordHash,
                "PBKDF2 failed with \(iterations) iterations",
                cause: error
            )
        }
    }

    static func parse(_ encoded: String) throws(AuthError) -> (
        iterations: Int, salt: [UInt8], hash: [UInt8]
    ) {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "pbkdf2-sha256",
            parts[2].hasPrefix("i="),
            let iterations = Int(parts[2].dropFirst(2)), iterations >= 1, iterations <= 100_000_000,
            let salt = Base64.decode(parts[3], padding: .absent), salt.count >= 8,
            let hash = Base64.decode(parts[4], padding: .absent), hash.count >= 16
        else {
            throw AuthError(
                .invalidPasswordHash,
                "stored password hash is not in the '$pbkdf2-sha256$i=N$salt$hash' form"
            )
        }
        return (iterations, salt, hash)
    }

    static func unpadded(_ bytes: [UInt8]) -> String {
        var text = Base64.encode(bytes)
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
