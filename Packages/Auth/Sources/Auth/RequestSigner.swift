internal import Crypto
public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A per-session HMAC key: the `keyid` sent in `Signature-Input` and its secret.
///
/// The secret never appears in `description`, logs or errors.
public struct SigningKey: Sendable {
    /// The key id the server issued (sent in the clear as `keyid`).
    public let id: String
    let key: SymmetricKey

    /// Creates a key from its id and secret bytes.
    /// - Throws: ``AuthError`` `invalidRequest` when the id is empty, longer than 200 bytes or
    ///   holds characters a structured-field string cannot carry (`"`, `\`, controls), or
    ///   the secret is shorter than 16 bytes.
    public init(id: String, secret: some ContiguousBytes) throws(AuthError) {
        guard !id.isEmpty, id.utf8.count <= 200,
            id.utf8.allSatisfy({
                $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
            })
        else {
            throw AuthError(
                .invalidRequest,
                "signing key id must be 1-200 printable ASCII characters without quotes or backslashes"
            )
        }
        let key = SymmetricKey(data: secret)
        guard key.bitCount >= 128 else {
            throw AuthError(.invalidRequest, "signing key '\(id)' is shorter than 16 bytes")
        }
        self.id = id
        self.key = key
    }

    /// A new random 256-bit key with the given id (server side, one per session).
    public static func random(id: String) -> SigningKey {
        // The id is checked by the caller's format (`TokenIssuer` makes it); fall back safely.
        let secret = SymmetricKey(size: .bits256)
        return secret.withUnsafeBytes { bytes in
            (try? SigningKey(id: id, secret: bytes)) ?? SigningKey(uncheckedID: "key", key: secret)
        }
    }

    init(uncheckedID: String, key: SymmetricKey) {
        self.id = uncheckedID
        self.key = key
    }

    /// Calls `body` with the secret's bytes, for a server's ``SessionStore`` that must keep
    /// them (encrypt them at rest where the database is shared). Never log them.
    public func withSecretBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try key.withUnsafeBytes(body)
    }

    /// The secret in base64, for the token response only.
    var secretBase64: String { key.withUnsafeBytes { Base64.encode($0) } }
}

/// The request headers a signature covers when the request carries them: `Content-Type`,
/// `Idempotency-Key` and `If-Match` (in that order after the three fixed components). A
/// verifier refuses a request that carries one of them uncovered, so a proxy or attacker
/// cannot change how the body is read, which operation a retry repeats, or which version
/// a write applies to.
public struct CoveredHeaders: Sendable, Equatable {
    /// `Content-Type`.
    public var contentType: String?
    /// `Idempotency-Key`.
    public var idempotencyKey: String?
    /// `If-Match`.
    public var ifMatch: String?

    /// Creates the values (`nil` = header absent).
    public init(contentType: String? = nil, idempotencyKey: String? = nil, ifMatch: String? = nil) {
        self.contentType = contentType
        self.idempotencyKey = idempotencyKey
        self.ifMatch = ifMatch
    }

    /// No covered header.
    public static let none = CoveredHeaders()

    /// The lower-case names, in signature order.
    static let names = ["content-type", "idempotency-key", "if-match"]

    /// The value of the header at `index` of ``names``.
    subscript(index: Int) -> String? {
        switch index {
        case 0: return contentType
        case 1: return idempotencyKey
        default: return ifMatch
        }
    }

    var isEmpty: Bool { contentType == nil && idempotencyKey == nil && ifMatch == nil }

    /// A header value as RFC 9421 §2.1 covers it: leading and trailing spaces and tabs removed.
    static func canonical(_ value: String) -> Substring {
        let utf8 = value.utf8
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start < end, utf8[start] == 0x20 || utf8[start] == 0x09 {
            start = utf8.index(after: start)
        }
        while end > start,
            utf8[utf8.index(before: end)] == 0x20 || utf8[utf8.index(before: end)] == 0x09
        {
            end = utf8.index(before: end)
        }
        return value[start..<end]
    }
}

/// The three header values that sign one request.
public struct SignatureHeaders: Sendable, Equatable {
    /// `Signature-Input`: `sig1=("@method" "@target-uri" "content-digest");created=…;keyid="…";nonce="…";alg="hmac-sha256"`.
    public var signatureInput: String
    /// `Signature`: `sig1=:<base64 HMAC-SHA256>:`.
    public var signature: String
    /// `Content-Digest`: `sha-256=:<base64 SHA-256 of the body>:` (RFC 9530).
    public var contentDigest: String

    /// Sets the three headers on a request.
    public func apply(to request: inout URLRequest) {
        request.setValue(signatureInput, forHTTPHeaderField: "Signature-Input")
        request.setValue(signature, forHTTPHeaderField: "Signature")
        request.setValue(contentDigest, forHTTPHeaderField: "Content-Digest")
    }
}

/// Signs requests with HMAC-SHA256 in the style of RFC 9421 (HTTP Message Signatures).
///
/// The covered components are `"@method"`, `"@target-uri"` and `"content-digest"`; the
/// parameters are `created`, `keyid`, `nonce` and `alg="hmac-sha256"`, under the label `sig1`.
/// The HMAC key schedule is computed once per signer, the signature base is built in one byte
/// buffer, and no Foundation formatter runs, so signing a GET takes a few microseconds.
///
/// ```swift
/// let signer = RequestSigner(key: try SigningKey(id: "k1", secret: secretBytes))
/// let headers = signer.sign(method: "GET", targetURI: "https://store.example/v1/items", body: [], created: 1_700_000_000)
/// ```
public struct RequestSigner: Sendable {
    /// The key this signer uses.
    public let key: SigningKey
    /// HMAC with the key's inner and outer pads already absorbed; copied per signature.
    private let prepared: HMAC<SHA256>
    private let keyIDBytes: [UInt8]

    /// Creates a signer for a key.
    public init(key: SigningKey) {
        self.key = key
        self.prepared = HMAC<SHA256>(key: key.key)
        self.keyIDBytes = Array(key.id.utf8)
    }

    /// The `Content-Digest` value of an empty body, precomputed.
    public static let emptyBodyDigest = "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"

    /// The RFC 9530 `Content-Digest` value (`sha-256=:…:`) of a body.
    public static func contentDigest(of body: some ContiguousBytes) -> String {
        body.withUnsafeBytes { bytes in
            if bytes.isEmpty { return emptyBodyDigest }
            let digest = SHA256.hash(data: bytes)
            var out = OutputBuffer(capacity: 56)
            out.append("sha-256=:")
            digest.withUnsafeBytes { Base64.encode($0, into: &out) }
            out.append(UInt8(ascii: ":"))
            return out.string()
        }
    }

    /// Signs a request.
    /// - Parameters:
    ///   - method: the HTTP method, upper case (`GET`).
    ///   - targetURI: the full request URI as sent (`https://host:port/path?query`, no
    ///     fragment: it is never sent).
    ///   - body: the exact body bytes (empty for none).
    ///   - created: the signing time in Unix seconds, already corrected for clock skew.
    ///   - nonce: a unique value for this request; by default 128 random bits in hex.
    ///   - covering: the request's `Content-Type`, `Idempotency-Key` and `If-Match` values
    ///     (each one present must be covered, or the verifier refuses the request).
    public func sign(
        method: String,
        targetURI: String,
        body: some ContiguousBytes,
        created: Int64,
        nonce: String? = nil,
        covering headers: CoveredHeaders = .none
    ) -> SignatureHeaders {
        let digest = Self.contentDigest(of: body)
        return sign(
            method: method,
            targetURI: targetURI,
            contentDigest: digest,
            created: created,
            nonce: nonce,
            covering: headers
        )
    }

    /// Signs a request whose `Content-Digest` value is already known.
    public func sign(
        method: String,
        targetURI: String,
        contentDigest: String,
        created: Int64,
        nonce: String? = nil,
        covering headers: CoveredHeaders = .none
    ) -> SignatureHeaders {
        var base = OutputBuffer(capacity: 160 + targetURI.utf8.count + method.utf8.count)
        SignatureBase.appendComponents(
            method: method,
            targetURI: targetURI,
            contentDigest: contentDigest,
            covered: headers,
            into: &base
        )
        base.append("\"@signature-params\": ")
        let paramsStart = base.bytes.count
        SignatureBase.appendParams(
            created: created,
            keyID: keyIDBytes,
            nonce: nonce,
            covered: headers,
            into: &base
        )

        var mac = prepared
        base.bytes.withUnsafeBytes { mac.update(data: $0) }
        let code = mac.finalize()

        var signature = OutputBuffer(capacity: 51)
        signature.append("sig1=:")
        code.withUnsafeBytes { Base64.encode($0, into: &signature) }
        signature.append(UInt8(ascii: ":"))

        var input = OutputBuffer(capacity: 5 + base.bytes.count - paramsStart)
        input.append("sig1=")
        input.bytes.append(contentsOf: base.bytes[paramsStart...])
        return SignatureHeaders(
            signatureInput: input.string(),
            signature: signature.string(),
            contentDigest: contentDigest
        )
    }

    /// Signs a `URLRequest` in place (method, URL without its fragment, body, and the
    /// `Content-Type`, `Idempotency-Key` and `If-Match` headers as set) and sets the headers.
    /// - Parameter created: the signing time in Unix seconds, corrected for clock skew.
    public func sign(_ request: inout URLRequest, created: Int64) {
        let method = request.httpMethod ?? "GET"
        let target = request.url.flatMap(AuthClient.withoutFragment)?.absoluteString ?? ""
        let covered = CoveredHeaders(
            contentType: request.value(forHTTPHeaderField: "Content-Type"),
            idempotencyKey: request.value(forHTTPHeaderField: "Idempotency-Key"),
            ifMatch: request.value(forHTTPHeaderField: "If-Match")
        )
        let digest = request.httpBody.map { Self.contentDigest(of: $0) } ?? Self.emptyBodyDigest
        sign(
            method: method,
            targetURI: target,
            contentDigest: digest,
            created: created,
            covering: covered
        ).apply(to: &request)
    }

    /// The raw HMAC-SHA256 of a signature base (the verifier recomputes with it).
    func mac(_ bytes: UnsafeRawBufferPointer) -> HashedAuthenticationCode<SHA256> {
        var mac = prepared
        mac.update(data: bytes)
        return mac.finalize()
    }
}

/// Builds RFC 9421 signature bases; shared by the signer and the verifier.
enum SignatureBase {
    static let componentList: StaticString = "(\"@method\" \"@target-uri\" \"content-digest\""

    static func appendComponents(
        method: String,
        targetURI: String,
        contentDigest: String,
        covered: CoveredHeaders,
        into out: inout OutputBuffer
    ) {
        out.append("\"@method\": ")
        out.append(method)
        out.append("\n\"@target-uri\": ")
        out.append(targetURI)
        out.append("\n\"content-digest\": ")
        out.append(contentDigest)
        out.append(UInt8(ascii: "\n"))
        guard !covered.isEmpty else { return }
        for index in CoveredHeaders.names.indices {
            guard let value = covered[index] else { continue }
            out.append(UInt8(ascii: "\""))
            out.append(CoveredHeaders.names[index])
            out.append("\": ")
            out.append(String(CoveredHeaders.canonical(value)))
            out.append(UInt8(ascii: "\n"))
        }
    }

    static func appendParams(
        created: Int64,
        keyID: [UInt8],
        nonce: String?,
        covered: CoveredHeaders,
        into out: inout OutputBuffer
    ) {
        out.append(componentList)
        if !covered.isEmpty {
            for index in CoveredHeaders.names.indices where covered[index] != nil {
                out.append(" \"")
                out.append(CoveredHeaders.names[index])
                out.append(UInt8(ascii: "\""))
            }
        }
        out.append(UInt8(ascii: ")"))
        out.append(";created=")
        out.append(decimal: created)
        out.append(";keyid=\"")
        out.append(contentsOf: keyID)
        out.append("\";nonce=\"")
        if let nonce {
            out.append(nonce)
        } else {
            appendRandomNonce(into: &out)
        }
        out.append("\";alg=\"hmac-sha256\"")
    }

    static func appendRandomNonce(into out: inout OutputBuffer) {
        var generator = SystemRandomNumberGenerator()
        let hex: StaticString = "0123456789abcdef"
        hex.withUTF8Buffer { table in
            for _ in 0..<2 {
                var word = generator.next() as UInt64
                for _ in 0..<16 {
                    out.append(table[Int(word & 15)])
                    word >>= 4
                }
            }
        }
    }
}
