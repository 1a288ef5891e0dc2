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
        /// The covered components are not exactly `@method`, `@target-uri`, `content-digest`.
        case wrongComponents
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

    /// The three values a ``RequestSigner`` produced (tests, tools).
    public init(_ signed: SignatureHeaders) {
        self.init(
            signatureInput: signed.signatureInput,
            signature: signed.signature,
            contentDigest: signed.contentDigest
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
/// `alg="hmac-sha256"`; the covered components are exactly `"@method" "@target-uri"
/// "content-digest"`; `keyid` is the session's key; `created` is at most ``window`` seconds
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
        guard let inputHeader = headers.signatureInput, let signatureHeader = headers.signature,
            let params = Self.member("sig1", in: inputHeader),
            let sigValue = Self.member("sig1", in: signatureHeader)
        else { throw SignatureRejection(reason: .missingSignature) }
        guard let parsed = ParsedParams(params) else {
            throw SignatureRejection(reason: .malformedSignature)
        }
        let keyID = parsed.keyID
        guard parsed.alg == "hmac-sha256" else {
            throw SignatureRejection(reason: .unsupportedAlgorithm, keyID: keyID)
        }
        guard parsed.components == Self.expectedComponents else {
            throw SignatureRejection(reason: .wrongComponents, keyID: keyID)
        }
        guard keyID == key.id else { throw SignatureRejection(reason: .keyMismatch, keyID: keyID) }
        if parsed.created < now - window {
            throw SignatureRejection(reason: .expired, keyID: keyID)
        }
        if parsed.created > now + futureWindow {
            throw SignatureRejection(reason: .createdInFuture, keyID: keyID)
        }

        guard let digestHeader = headers.contentDigest,
            let sentDigest = Self.sha256Member(of: digestHeader)
        else {
            throw SignatureRejection(reason: .missingDigest, keyID: keyID)
        }
        let actualDigest = RequestSigner.contentDigest(of: body)
        guard "sha-256=" + sentDigest == actualDigest else {
            throw SignatureRejection(reason: .digestMismatch, keyID: keyID)
        }
        guard sigValue.count >= 2, sigValue.first == ":", sigValue.last == ":",
            let provided = Base64.decode(sigValue.dropFirst().dropLast())
        else { throw SignatureRejection(reason: .malformedSignature, keyID: keyID) }

        var base = OutputBuffer(capacity: 200 + targetURI.utf8.count)
        SignatureBase.appendComponents(
            method: method,
            targetURI: targetURI,
            contentDigest: actualDigest,
            into: &base
        )
        base.append("\"@signature-params\": ")
        base.append(String(params))
        let expected = base.bytes.withUnsafeBytes { RequestSigner(key: key).mac($0) }
        // swift-crypto's comparison of a MAC with bytes is constant-time (CRYPTO_memcmp).
        guard expected == provided else {
            throw SignatureRejection(reason: .badSignature, keyID: keyID)
        }
        return VerifiedSignature(keyID: keyID, created: parsed.created, nonce: parsed.nonce)
    }

    static let expectedComponents = ["@method", "@target-uri", "content-digest"]

    /// The value of dictionary member `label` in a structured-field dictionary header
    /// (`sig1=…, sig2=…`); members are split at top-level commas. Works on UTF-8 bytes:
    /// every delimiter is ASCII, so the byte indices are valid string indices.
    static func member(_ label: String, in header: String) -> Substring? {
        let utf8 = header.utf8
        var depth = 0
        var inString = false
        var start = utf8.startIndex
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index = utf8.index(after: index)
                    if index == utf8.endIndex { break }
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "(") {
                depth += 1
            } else if byte == UInt8(ascii: ")") {
                depth -= 1
            } else if byte == UInt8(ascii: ","), depth == 0 {
                if let value = memberValue(label, header, start, index) { return value }
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        return memberValue(label, header, start, utf8.endIndex)
    }

    private static func memberValue(
        _ label: String,
        _ header: String,
        _ from: String.Index,
        _ to: String.Index
    ) -> Substring? {
        let utf8 = header.utf8
        var index = from
        while index < to, utf8[index] == UInt8(ascii: " ") { index = utf8.index(after: index) }
        for byte in label.utf8 {
            guard index < to, utf8[index] == byte else { return nil }
            index = utf8.index(after: index)
        }
        guard index < to, utf8[index] == UInt8(ascii: "=") else { return nil }
        var end = to
        while end > index, utf8[utf8.index(before: end)] == UInt8(ascii: " ") {
            end = utf8.index(before: end)
        }
        return header[utf8.index(after: index)..<end]
    }

    /// The `:base64:` part of the `sha-256` member of a `Content-Digest` header.
    static func sha256Member(of header: String) -> Substring? {
        guard let value = member("sha-256", in: header), value.utf8.count > 2,
            value.utf8.first == UInt8(ascii: ":"), value.utf8.last == UInt8(ascii: ":")
        else { return nil }
        return value
    }
}

/// The parameters of a `sig1` inner list, parsed from its UTF-8 bytes.
struct ParsedParams {
    var components: [String] = []
    var created: Int64 = 0
    var keyID = ""
    var nonce = ""
    var alg = ""

    init?(_ text: Substring) {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "("),
            let close = bytes.firstIndex(of: UInt8(ascii: ")"))
        else { return nil }
        for item in bytes[1..<close].split(separator: UInt8(ascii: " ")) {
            guard item.count >= 2, item.first == UInt8(ascii: "\""), item.last == UInt8(ascii: "\"")
            else { return nil }
            components.append(String(decoding: item.dropFirst().dropLast(), as: UTF8.self))
        }
        var sawCreated = false
        let rest = bytes[(close + 1)...]
        for param in rest.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: true) {
            guard let equals = param.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            let name = param[param.startIndex..<equals]
            let value = param[(equals + 1)...]
            func string() -> String? {
                guard value.count >= 2, value.first == UInt8(ascii: "\""),
                    value.last == UInt8(ascii: "\"")
                else { return nil }
                let inner = value.dropFirst().dropLast()
                guard !inner.contains(UInt8(ascii: "\"")), !inner.contains(UInt8(ascii: "\\"))
                else { return nil }
                return String(decoding: inner, as: UTF8.self)
            }
            switch String(decoding: name, as: UTF8.self) {
            case "created":
                guard let number = Int64(String(decoding: value, as: UTF8.self)) else { return nil }
                created = number
                sawCreated = true
            case "keyid":
                guard let parsed = string() else { return nil }
                keyID = parsed
            case "nonce":
                guard let parsed = string() else { return nil }
                nonce = parsed
            case "alg":
                guard let parsed = string() else { return nil }
                alg = parsed
            default: continue  // other parameters are covered by the signature anyway
            }
        }
        guard sawCreated, !keyID.isEmpty, !nonce.isEmpty, nonce.utf8.count <= 128 else {
            return nil
        }
    }
}
