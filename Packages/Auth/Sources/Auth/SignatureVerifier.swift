internal import Crypto
public import Foundation
public import Logging

/// Why a signed request was refused. Logged by the verifier (with the key id, never a
/// secret); the client only sees the 401 problem document of ``problem``.
public struct SignatureRejection: Error, Sendable, CustomStringConvertible {
    /// The internal reason.
    public enum Reason: String, Sendable, Equatable {
        /// No `Signature-Input` or `Signature` header, or no `sig1` member in it.
        case missingSignature
        /// The headers could not be parsed.
        case malformedSignature
        /// `alg` is not `hmac-sha256`.
        case unsupportedAlgorithm
        /// The covered components are not `@method`, `@target-uri`, `content-digest`, then
        /// some of `content-type`, `idempotency-key`, `if-match` in that order; or one of
        /// those is covered but absent from the request.
        case wrongComponents
        /// The request carries `Content-Type`, `Idempotency-Key` or `If-Match` but the
        /// signature does not cover it.
        case uncoveredHeader
        /// `keyid` is not the key of the session the bearer token belongs to.
        case keyMismatch
        /// `created` is more than the window before the server's time.
        case expired
        /// `created` is more than the window after the server's time.
        case createdInFuture
        /// No `Content-Digest` header, or no `sha-256` in it.
        case missingDigest
        /// `Content-Digest` does not match the body.
        case digestMismatch
        /// The HMAC does not match.
        case badSignature
        /// The nonce was already seen for this key within the window.
        case replayedNonce
        /// The nonce store refused the nonce: this key's own quota is full and the request is
        /// not newer than what the store keeps for the key, so a replay could no longer be
        /// told apart. The client signs again with the current time.
        case nonceCacheOverflow
        /// The nonce store failed (database unreachable): nothing was decided; 503.
        case storeUnavailable
    }

    /// The reason.
    public var reason: Reason
    /// The `keyid` the request named, when it could be read (not secret).
    public var keyID: String?
    /// The nonce store's error for ``Reason/storeUnavailable``.
    public var cause: (any Error & Sendable)?

    /// Creates a rejection.
    public init(reason: Reason, keyID: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.reason = reason
        self.keyID = keyID
        self.cause = cause
    }

    /// The RFC 9457 document to answer with: 401 (`signature-outside-window` for a time the
    /// client can correct, `invalid-signature` otherwise), or 503 `unavailable`.
    public var problem: ProblemDetails {
        switch reason {
        case .expired, .createdInFuture:
            return ProblemDetails(
                type: AuthProblemType.signatureOutsideWindow,
                title: "Signature time outside the accepted window",
                status: 401,
                detail: "Correct the clock from this response's Date header and sign again."
            )
        case .nonceCacheOverflow:
            return ProblemDetails(
                type: AuthProblemType.signatureOutsideWindow,
                title: "Signature older than the replay window kept for this key",
                status: 401,
                detail: "Sign again with the current time."
            )
        case .storeUnavailable:
            return TokenRejection.unavailableProblem
        default:
            return ProblemDetails(
                type: AuthProblemType.invalidSignature,
                title: "Invalid request signature",
                status: 401,
                detail: "The request signature could not be verified."
            )
        }
    }

    /// A description without secrets.
    public var description: String {
        "signature rejected: \(reason.rawValue)" + (keyID.map { " (keyid \($0))" } ?? "")
    }
}

/// What a verified signature told the server.
public struct VerifiedSignature: Sendable, Equatable {
    /// The key id that signed.
    public var keyID: String
    /// The signing time (Unix seconds).
    public var created: Int64
    /// The nonce.
    public var nonce: String
}

/// The header values of a request that take part in its signature.
///
/// Build it from the server's request headers with ``init(_:)`` (it asks for each name in
/// ``names``), so headers added to the signature later need no change at the call site.
public struct SignedRequestHeaders: Sendable, Equatable {
    /// `Signature-Input`.
    public var signatureInput: String?
    /// `Signature`.
    public var signature: String?
    /// `Content-Digest`.
    public var contentDigest: String?
    /// `Content-Type`.
    public var contentType: String?
    /// `Idempotency-Key`.
    public var idempotencyKey: String?
    /// `If-Match`.
    public var ifMatch: String?

    /// The values a signature must cover when present.
    public var covered: CoveredHeaders {
        CoveredHeaders(contentType: contentType, idempotencyKey: idempotencyKey, ifMatch: ifMatch)
    }

    /// The lower-case header names ``init(_:)`` asks for.
    public static let names = [
        "signature-input", "signature", "content-digest", "content-type", "idempotency-key",
        "if-match",
    ]

    /// Creates the values one by one (`nil` = header absent).
    public init(
        signatureInput: String? = nil,
        signature: String? = nil,
        contentDigest: String? = nil,
        contentType: String? = nil,
        idempotencyKey: String? = nil,
        ifMatch: String? = nil
    ) {
        self.signatureInput = signatureInput
        self.signature = signature
        self.contentDigest = contentDigest
        self.contentType = contentType
        self.idempotencyKey = idempotencyKey
        self.ifMatch = ifMatch
    }

    /// The three values a ``RequestSigner`` produced, and the covered headers the request
    /// carries (tests, tools).
    public init(_ signed: SignatureHeaders, covering covered: CoveredHeaders = .none) {
        self.init(
            signatureInput: signed.signatureInput,
            signature: signed.signature,
            contentDigest: signed.contentDigest,
            contentType: covered.contentType,
            idempotencyKey: covered.idempotencyKey,
            ifMatch: covered.ifMatch
        )
    }

    /// Reads the values through `lookup`, called with each lower-case name of ``names``; it
    /// returns the header's value (several fields of one name joined with `", "`) or `nil`.
    public init(_ lookup: (String) -> String?) {
        self.init(
            signatureInput: lookup("signature-input"),
            signature: lookup("signature"),
            contentDigest: lookup("content-digest"),
            contentType: lookup("content-type"),
            idempotencyKey: lookup("idempotency-key"),
            ifMatch: lookup("if-match")
        )
    }
}

/// Checks RFC 9421-style HMAC signatures made by ``RequestSigner`` (server side).
///
/// Checks, in order, without touching the store: the `sig1` member is present and parses;
/// `alg="hmac-sha256"`; the covered components are `"@method" "@target-uri"
/// "content-digest"` followed by exactly those of `"content-type" "idempotency-key"
/// "if-match"` the request carries; `keyid` is the session's key; `created` is at most ``window`` seconds
/// before the server's time and at most ``futureWindow`` seconds after it (clients sign with
/// the skew they learned from `Date`); `Content-Digest` matches the body; the HMAC matches
/// (constant-time, swift-crypto). Only a request that passed all of that reaches the
/// ``NonceStore``, so junk cannot fill it: a nonce already recorded for the key is a replay,
/// and a nonce the store refuses because of that key's own quota is refused
/// (``SignatureRejection/Reason/nonceCacheOverflow``) — never because of another key.
public final class SignatureVerifier: Sendable {
    /// How far `created` may lie before the server's time, in seconds.
    public let window: Int64
    /// How far `created` may lie after the server's time, in seconds (at most 30).
    public let futureWindow: Int64
    /// Where accepted nonces are remembered.
    public let store: any NonceStore
    private let logger: Logger

    /// Creates a verifier.
    /// - Parameters:
    ///   - window: seconds a signature stays valid after its `created` time (default 300).
    ///   - futureWindow: seconds `created` may be ahead of the server's time (default 30;
    ///     larger values are capped at 30: the replay window must not stretch into the future).
    ///   - store: the replay window (default: a new ``InMemoryNonceStore``).
    ///   - logger: where rejections are logged (`notice`, with reason and key id only).
    public init(
        window: Int64 = 300,
        futureWindow: Int64 = 30,
        store: any NonceStore = InMemoryNonceStore(),
        logger: Logger
    ) {
        self.window = max(1, window)
        self.futureWindow = min(max(0, futureWindow), 30)
        self.store = store
        self.logger = logger
    }

    /// Verifies one request.
    /// - Parameters:
    ///   - method: the request method as received.
    ///   - targetURI: the full URI the client addressed (`https://host:port/path?query`),
    ///     rebuilt from the server's public base URL and the request's path and query.
    ///   - headers: the request's signature-related header values.
    ///   - body: the body bytes as received.
    ///   - key: the signing key of the session the bearer token authenticated.
    ///   - now: the server's time.
    /// - Throws: ``SignatureRejection``; answer its ``SignatureRejection/problem``.
    public func verify(
        method: String,
        targetURI: String,
        headers: SignedRequestHeaders,
        body: some ContiguousBytes & Sendable,
        key: SigningKey,
        now: Date = Date()
    ) async throws(SignatureRejection) -> VerifiedSignature {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        do {
            let verified = try check(
                method: method,
                targetURI: targetURI,
                headers: headers,
                body: body,
                key: key,
                now: seconds
            )
            try await remember(verified, now: seconds)
            return verified
        } catch {
            logger.notice(
                "request signature rejected",
                metadata: [
                    "reason": "\(error.reason.rawValue)", "keyid": "\(error.keyID ?? "-")",
                    "method": "\(method)",
                ]
            )
            throw error
        }
    }

    /// Records the nonce of a signature that passed every other check.
    private func remember(_ verified: VerifiedSignature, now: Int64)
        async throws(SignatureRejection)
    {
        let outcome: NonceOutcome
        do {
            outcome = try await store.record(
                keyID: verified.keyID,
                nonce: verified.nonce,
                created: verified.created,
                expiresAt: verified.created + window,
                now: now
            )
        } catch {
            logger.error("nonce store failed", metadata: ["error": "\(type(of: error))"])
            throw SignatureRejection(reason: .storeUnavailable, keyID: verified.keyID, cause: error)
        }
        switch outcome {
        case .recorded: return
        case .replay: throw SignatureRejection(reason: .replayedNonce, keyID: verified.keyID)
        case .refused: throw SignatureRejection(reason: .nonceCacheOverflow, keyID: verified.keyID)
        }
    }

    /// Every check but the nonce store's (synchronous, no I/O).
    func check(
        method: String,
        targetURI: String,
        headers: SignedRequestHeaders,
        body: some ContiguousBytes,
        key: SigningKey,
        now: Int64
    ) throws(SignatureRejection) -> VerifiedSignature {
        guard let inputHeader = headers.signatureInput, let signatureHeader = headers.signature
        else { throw SignatureRejection(reason: .missingSignature) }
        guard let parsed = StructuredFieldReader.signatureParams("sig1", in: inputHeader),
            let created = parsed.created, let keyID = parsed.keyID, !keyID.isEmpty,
            let nonce = parsed.nonce, !nonce.isEmpty, nonce.utf8.count <= 128
        else { throw SignatureRejection(reason: .malformedSignature) }
        guard parsed.alg == "hmac-sha256" else {
            throw SignatureRejection(reason: .unsupportedAlgorithm, keyID: keyID)
        }
        let covered = headers.covered
        try Self.checkComponents(parsed.components, covered: covered, keyID: keyID)
        guard keyID == key.id else { throw SignatureRejection(reason: .keyMismatch, keyID: keyID) }
        if created < now - window {
            throw SignatureRejection(reason: .expired, keyID: keyID)
        }
        if created > now + futureWindow {
            throw SignatureRejection(reason: .createdInFuture, keyID: keyID)
        }

        guard let digestHeader = headers.contentDigest,
            let sentDigest = StructuredFieldReader.byteSequence("sha-256", in: digestHeader)
        else {
            throw SignatureRejection(reason: .missingDigest, keyID: keyID)
        }
        let actualDigest = RequestSigner.contentDigest(of: body)
        // "sha-256=:" + base64 + ":"
        guard actualDigest.utf8.count == sentDigest.utf8.count + 10,
            actualDigest.utf8.dropFirst(9).prefix(sentDigest.utf8.count).elementsEqual(
                sentDigest.utf8
            )
        else {
            throw SignatureRejection(reason: .digestMismatch, keyID: keyID)
        }
        guard let encoded = StructuredFieldReader.byteSequence("sig1", in: signatureHeader),
            let provided = Base64.decode(encoded)
        else { throw SignatureRejection(reason: .malformedSignature, keyID: keyID) }

        var base = OutputBuffer(capacity: 200 + targetURI.utf8.count)
        SignatureBase.appendComponents(
            method: method,
            targetURI: targetURI,
            contentDigest: actualDigest,
            covered: covered,
            into: &base
        )
        base.append("\"@signature-params\": ")
        base.append(parsed.text)
        let expected = base.bytes.withUnsafeBytes { RequestSigner(key: key).mac($0) }
        // swift-crypto's comparison of a MAC with bytes is constant-time (CRYPTO_memcmp).
        guard expected == provided else {
            throw SignatureRejection(reason: .badSignature, keyID: keyID)
        }
        return VerifiedSignature(keyID: keyID, created: created, nonce: nonce)
    }

    static let requiredComponents = ["@method", "@target-uri", "content-digest"]

    /// The component list must be the three required ones, then exactly the covered headers
    /// the request carries, in ``CoveredHeaders/names`` order.
    static func checkComponents(_ components: [String], covered: CoveredHeaders, keyID: String)
        throws(SignatureRejection)
    {
        guard components.count >= 3, components.count <= 6,
            components[0] == requiredComponents[0], components[1] == requiredComponents[1],
            components[2] == requiredComponents[2]
        else { throw SignatureRejection(reason: .wrongComponents, keyID: keyID) }
        // The optional ones: known names, in order, each once.
        var listed: [Bool] = [false, false, false]
        var previous = -1
        for name in components[3...] {
            guard let index = CoveredHeaders.names.firstIndex(of: name), index > previous else {
                throw SignatureRejection(reason: .wrongComponents, keyID: keyID)
            }
            listed[index] = true
            previous = index
        }
        for index in CoveredHeaders.names.indices {
            switch (listed[index], covered[index] != nil) {
            case (true, false): throw SignatureRejection(reason: .wrongComponents, keyID: keyID)
            case (false, true): throw SignatureRejection(reason: .uncoveredHeader, keyID: keyID)
            default: continue
            }
        }
    }

    /// Parses the `sig1` members of `Signature-Input` and `Signature` the way ``verify`` does
    /// (for the benchmark that compares this parser with swift-http-structured-headers).
    @_spi(Benchmarks)
    public static func parseSignatureMembers(signatureInput: String, signature: String) -> (
        components: [String], created: Int64, keyID: String, nonce: String, signature: [UInt8]
    )? {
        guard let parsed = StructuredFieldReader.signatureParams("sig1", in: signatureInput),
            let created = parsed.created, let keyID = parsed.keyID, let nonce = parsed.nonce,
            let encoded = StructuredFieldReader.byteSequence("sig1", in: signature),
            let bytes = Base64.decode(encoded)
        else { return nil }
        return (parsed.components, created, keyID, nonce, bytes)
    }
}
