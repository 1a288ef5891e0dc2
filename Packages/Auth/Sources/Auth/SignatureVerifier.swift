internal import Crypto
public import Foundation
public import Logging
internal import Synchronization

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
        /// The nonce cache was full and this request is older than an evicted entry, so a
        /// replay could no longer be told apart; the client signs again with a fresh time.
        case nonceCacheOverflow
    }

    /// The reason.
    public var reason: Reason
    /// The `keyid` the request named, when it could be read (not secret).
    public var keyID: String?

    /// Creates a rejection.
    public init(reason: Reason, keyID: String? = nil) {
        self.reason = reason
        self.keyID = keyID
    }

    /// The RFC 9457 document to send with status 401.
    public var problem: ProblemDetails {
        switch reason {
        case .expired, .createdInFuture:
            return ProblemDetails(
                type: AuthProblemType.signatureOutsideWindow,
                title: "Signature time outside the accepted window",
                status: 401,
                detail: "Correct the clock from this response's Date header and sign again."
            )
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

/// Checks RFC 9421-style HMAC signatures made by ``RequestSigner`` (server side).
///
/// Checks, in order: the `sig1` member is present and parses; `alg="hmac-sha256"`; the
/// covered components are exactly `"@method" "@target-uri" "content-digest"`; `keyid` is the
/// session's key; `created` is within ±`window` of the server's time (clients sign with the
/// skew they learned from `Date`); `Content-Digest` matches the body; the HMAC matches
/// (constant-time); and only then the nonce is recorded, so a replay is refused and junk
/// cannot fill the cache. The cache is bounded: when it is full the oldest entry is evicted
/// and every request signed at or before its time is refused from then on
/// (``SignatureRejection/Reason/nonceCacheOverflow``), so no replay ever slips through.
public final class SignatureVerifier: Sendable {
    /// Accepted distance between `created` and the server's time, in seconds.
    public let window: Int64
    /// Maximum number of remembered nonces.
    public let nonceCapacity: Int
    private let logger: Logger
    private let nonces: Mutex<NonceCache>

    /// Creates a verifier.
    /// - Parameters:
    ///   - window: seconds either side of the server time (default 300).
    ///   - nonceCapacity: nonces remembered at most (default 200,000; ~30 MB at most).
    ///   - logger: where rejections are logged (`notice`, with reason and key id only).
    public init(window: Int64 = 300, nonceCapacity: Int = 200_000, logger: Logger) {
        self.window = window
        self.nonceCapacity = max(1, nonceCapacity)
        self.logger = logger
        self.nonces = Mutex(NonceCache())
    }

    /// Verifies one request.
    /// - Parameters:
    ///   - method: the request method as received.
    ///   - targetURI: the full URI the client addressed (`http://host:port/path?query`),
    ///     rebuilt from the server's public base URL and the request's path and query.
    ///   - signatureInput, signature, contentDigest: the header values (nil when absent).
    ///   - body: the body bytes as received.
    ///   - key: the signing key of the session the bearer token authenticated.
    ///   - now: the server's time.
    public func verify(
        method: String,
        targetURI: String,
        signatureInput: String?,
        signature: String?,
        contentDigest: String?,
        body: some ContiguousBytes,
        key: SigningKey,
        now: Date = Date()
    ) throws(SignatureRejection) -> VerifiedSignature {
        do {
            return try check(
                method: method,
                targetURI: targetURI,
                signatureInput: signatureInput,
                signature: signature,
                contentDigest: contentDigest,
                body: body,
                key: key,
                now: Int64(now.timeIntervalSince1970.rounded(.down))
            )
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

    private func check(
        method: String,
        targetURI: String,
        signatureInput: String?,
        signature: String?,
        contentDigest: String?,
        body: some ContiguousBytes,
        key: SigningKey,
        now: Int64
    ) throws(SignatureRejection) -> VerifiedSignature {
        guard let inputHeader = signatureInput, let signatureHeader = signature,
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
        if parsed.created > now + window {
            throw SignatureRejection(reason: .createdInFuture, keyID: keyID)
        }

        guard let digestHeader = contentDigest, let sentDigest = Self.sha256Member(of: digestHeader)
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
        let matches = expected.withUnsafeBytes { Self.constantTimeEqual($0, provided) }
        guard matches else { throw SignatureRejection(reason: .badSignature, keyID: keyID) }

        let floor = window
        let outcome = nonces.withLock { cache in
            cache.insert(
                key: keyID + "\u{0}" + parsed.nonce,
                created: parsed.created,
                now: now,
                window: floor,
                capacity: nonceCapacity
            )
        }
        switch outcome {
        case .inserted: break
        case .replay: throw SignatureRejection(reason: .replayedNonce, keyID: keyID)
        case .belowFloor: throw SignatureRejection(reason: .nonceCacheOverflow, keyID: keyID)
        }
        return VerifiedSignature(keyID: keyID, created: parsed.created, nonce: parsed.nonce)
    }

    /// Nonces currently remembered (for monitoring).
    public var rememberedNonceCount: Int { nonces.withLock { $0.entries.count } }

    static let expectedComponents = ["@method", "@target-uri", "content-digest"]

    /// Compares two byte strings in time that depends only on their lengths.
    static func constantTimeEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<rhs.count { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }

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

/// Bounded replay cache: insertion-ordered entries that expire after the window.
struct NonceCache {
    enum Outcome { case inserted, replay, belowFloor }

    var entries: [String: Int64] = [:]
    var order: [(key: String, created: Int64)] = []
    var head = 0
    /// Requests signed at or before this time are refused (an entry for that time was evicted early).
    var floor = Int64.min

    mutating func insert(key: String, created: Int64, now: Int64, window: Int64, capacity: Int)
        -> Outcome
    {
        // Drop entries that can no longer pass the time check anyway.
        while head < order.count, order[head].created < now - window {
            if entries[order[head].key] == order[head].created { entries[order[head].key] = nil }
            head += 1
        }
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        if created <= floor { return .belowFloor }
        if entries[key] != nil { return .replay }
        while entries.count >= capacity, head < order.count {
            let evicted = order[head]
            head += 1
            if entries.removeValue(forKey: evicted.key) != nil {
                floor = max(floor, evicted.created)
            }
        }
        if created <= floor { return .belowFloor }
        entries[key] = created
        order.append((key, created))
        return .inserted
    }
}
