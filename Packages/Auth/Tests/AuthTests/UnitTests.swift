import Crypto
import Foundation
import Logging
import Testing

@testable import Auth

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let quietLogger = Logger(label: "quiet", factory: { _ in SwiftLogNoOpLogHandler() })

@Suite("Request signing and verification")
struct SigningTests {
    let key = try! SigningKey(id: "sk-test", secret: [UInt8](repeating: 1, count: 32))
    let uri = "https://store.example/v1/items?limit=5"

    @Test("the signature base and headers follow RFC 9421 and RFC 9530 exactly")
    func knownAnswer() throws {
        let signer = RequestSigner(key: key)
        let headers = signer.sign(
            method: "POST",
            targetURI: uri,
            body: Array("hello".utf8),
            created: 1_700_000_000,
            nonce: "n0"
        )
        let digest = "sha-256=:LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=:"
        #expect(headers.contentDigest == digest)
        let params =
            "(\"@method\" \"@target-uri\" \"content-digest\");created=1700000000;keyid=\"sk-test\";nonce=\"n0\";alg=\"hmac-sha256\""
        #expect(headers.signatureInput == "sig1=" + params)
        let base =
            "\"@method\": POST\n\"@target-uri\": \(uri)\n\"content-digest\": \(digest)\n\"@signature-params\": \(params)"
        let expected = HMAC<SHA256>.authenticationCode(
            for: Array(base.utf8),
            using: SymmetricKey(data: [UInt8](repeating: 1, count: 32))
        )
        #expect(headers.signature == "sig1=:" + Data(expected).base64EncodedString() + ":")
        #expect(RequestSigner.contentDigest(of: [UInt8]()) == RequestSigner.emptyBodyDigest)
    }

    @Test("random nonces differ between signatures")
    func nonces() {
        let signer = RequestSigner(key: key)
        let a = signer.sign(method: "GET", targetURI: uri, body: [UInt8](), created: 1)
        let b = signer.sign(method: "GET", targetURI: uri, body: [UInt8](), created: 1)
        #expect(a.signatureInput != b.signatureInput)
        #expect(a.signature != b.signature)
    }

    enum Change: String, CaseIterable, Sendable {
        case none, method, uri, body, digestHeader, signatureByte, keyID, components, created
    }

    @Test("any change to a signed request is refused with its reason", arguments: Change.allCases)
    func changes(_ change: Change) throws {
        let verifier = SignatureVerifier(logger: quietLogger)
        let signer = RequestSigner(key: key)
        let now: Int64 = 1_700_000_000
        var headers = signer.sign(
            method: "PUT",
            targetURI: uri,
            body: Array("{\"a\":1}".utf8),
            created: now
        )
        var method = "PUT", target = uri, body = Array("{\"a\":1}".utf8)
        var expected: SignatureRejection.Reason?
        switch change {
        case .none: expected = nil
        case .method: method = "DELETE"; expected = .badSignature
        case .uri: target = uri + "0"; expected = .badSignature
        case .body: body = Array("{\"a\":2}".utf8); expected = .digestMismatch
        case .digestHeader: headers.contentDigest = "md5=:AAAA:"; expected = .missingDigest
        case .signatureByte:
            headers.signature = headers.signature.replacingOccurrences(
                of: "sig1=:",
                with: "sig1=:A"
            ).replacingOccurrences(of: "=:", with: ":").replacingOccurrences(
                of: "sig1:",
                with: "sig1=:"
            )
            expected = .badSignature
        case .keyID:
            headers.signatureInput = headers.signatureInput.replacingOccurrences(
                of: "sk-test",
                with: "sk-other"
            ); expected = .keyMismatch
        case .components:
            headers.signatureInput = headers.signatureInput.replacingOccurrences(
                of: " \"content-digest\"",
                with: ""
            ); expected = .wrongComponents
        case .created:
            headers.signatureInput = headers.signatureInput.replacingOccurrences(
                of: "created=\(now)",
                with: "created=\(now - 1)"
            ); expected = .badSignature
        }
        let result = Result { () throws(SignatureRejection) in
            try verifier.verify(
                method: method,
                targetURI: target,
                signatureInput: headers.signatureInput,
                signature: headers.signature,
                contentDigest: headers.contentDigest,
                body: body,
                key: key,
                now: Date(timeIntervalSince1970: TimeInterval(now))
            )
        }
        switch (result, expected) {
        case (.success, nil): break
        case (.failure(let rejection), let reason?): #expect(rejection.reason == reason)
        default: Issue.record("unexpected outcome \(result) for \(change)")
        }
    }

    @Test(
        "the time window is ±300 s around the server's time",
        arguments: [(-300, true), (300, true), (-301, false), (301, false)]
    )
    func window(offset: Int64, accepted: Bool) {
        let verifier = SignatureVerifier(logger: quietLogger)
        let now: Int64 = 1_700_000_000
        let headers = RequestSigner(key: key).sign(
            method: "GET",
            targetURI: uri,
            body: [UInt8](),
            created: now + offset
        )
        let ok =
            (try? verifier.verify(
                method: "GET",
                targetURI: uri,
                signatureInput: headers.signatureInput,
                signature: headers.signature,
                contentDigest: headers.contentDigest,
                body: [UInt8](),
                key: key,
                now: Date(timeIntervalSince1970: TimeInterval(now))
            )) != nil
        #expect(ok == accepted)
    }

    @Test("a full nonce cache evicts the oldest and still refuses every replay")
    func boundedNonceCache() throws {
        let verifier = SignatureVerifier(nonceCapacity: 3, logger: quietLogger)
        let signer = RequestSigner(key: key)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        func check(_ h: SignatureHeaders) -> SignatureRejection.Reason? {
            do {
                _ = try verifier.verify(
                    method: "GET",
                    targetURI: uri,
                    signatureInput: h.signatureInput,
                    signature: h.signature,
                    contentDigest: h.contentDigest,
                    body: [UInt8](),
                    key: key,
                    now: now
                )
                return nil
            } catch { return error.reason }
        }
        let signed = (0..<5).map { i in
            signer.sign(
                method: "GET",
                targetURI: uri,
                body: [UInt8](),
                created: 1_700_000_000 - 10 + Int64(i)
            )
        }
        for headers in signed { #expect(check(headers) == nil) }
        #expect(verifier.rememberedNonceCount == 3)
        #expect(check(signed[0]) == .nonceCacheOverflow)  // evicted, but refused by the floor
        #expect(check(signed[4]) == .replayedNonce)
    }

    @Test(
        "signing key ids that a header cannot carry are refused",
        arguments: ["", "a\"b", "back\\slash", "tab\tid"]
    )
    func badKeyIDs(_ id: String) {
        #expect(throws: AuthError.self) {
            try SigningKey(id: id, secret: [UInt8](repeating: 1, count: 32))
        }
    }

    @Test("keys shorter than 128 bits are refused, and descriptions hide the secret")
    func shortKeys() throws {
        #expect(throws: AuthError.self) {
            try SigningKey(id: "k", secret: [UInt8](repeating: 1, count: 8))
        }
        #expect(!"\(key)".contains("AQEB"))
    }
}

@Suite("Password hashing, tokens and formats")
struct ServerPieceTests {
    @Test("passwords hash to a self-describing PBKDF2 string and verify")
    func passwords() throws {
        let hasher = PasswordHasher(iterations: 2_000)
        let stored = try hasher.hash("correct horse battery staple")
        #expect(stored.hasPrefix("$pbkdf2-sha256$i=2000$"))
        #expect(try hasher.verify("correct horse battery staple", against: stored))
        #expect(try !hasher.verify("correct horse battery stapler", against: stored))
        #expect(try hasher.hash("same") != hasher.hash("same"))  // salted
        #expect(!hasher.needsRehash(stored))
        #expect(PasswordHasher(iterations: 4_000).needsRehash(stored))
        // A higher-cost hasher still verifies old hashes: the cost comes from the string.
        #expect(
            try PasswordHasher(iterations: 4_000).verify(
                "correct horse battery staple",
                against: stored
            )
        )
    }

    @Test(
        "malformed stored hashes are a typed error",
        arguments: [
            "", "plain", "$pbkdf2-sha256$i=x$AAAA$AAAA",
            "$bcrypt$i=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAA", "$pbkdf2-sha256$i=1000$!!$AAAA",
        ]
    )
    func malformedHashes(_ encoded: String) {
        let error = #expect(throws: AuthError.self) {
            try PasswordHasher(iterations: 1_000).verify("x", against: encoded)
        }
        #expect(error?.code == .invalidPasswordHash)
    }

    @Test("tokens are issued, refreshed with rotation, and revoked per session")
    func tokens() throws {
        let issuer = TokenIssuer(accessTokenLifetime: 60, logger: quietLogger)
        let now = Date()
        let first = issuer.issue(subject: "ana", now: now)
        let session = try issuer.authenticate(
            authorization: "Bearer " + first.accessToken,
            now: now
        )
        #expect(session.subject == "ana")
        #expect(session.signingKey.id == first.signingKeyID)
        #expect(throws: TokenRejection.self) {
            try issuer.authenticate(accessToken: first.accessToken, now: now + 61)
        }
        #expect(throws: TokenRejection.self) {
            try issuer.authenticate(authorization: first.accessToken, now: now)
        }
        let second = try issuer.refresh(refreshToken: first.refreshToken, now: now)
        #expect(second.signingKeyID == first.signingKeyID)
        #expect(throws: TokenRejection.self) {
            try issuer.refresh(refreshToken: first.refreshToken, now: now)
        }  // rotated
        #expect(throws: TokenRejection.self) {
            try issuer.authenticate(accessToken: second.refreshToken, now: now)
        }
        #expect(issuer.revoke(token: second.refreshToken))
        let revoked = #expect(throws: TokenRejection.self) {
            try issuer.authenticate(accessToken: second.accessToken, now: now)
        }
        #expect(revoked?.reason == .unknown || revoked?.reason == .revoked)
        #expect(!issuer.revoke(token: "nonsense"))
    }

    @Test(
        "token requests are parsed from form bodies",
        arguments: [
            ("grant_type=password&username=ana&password=a%26b+c", "password ana a&b c"),
            ("grant_type=refresh_token&refresh_token=abc", "refresh abc"),
            ("grant_type=client_credentials", "error"),
            ("username=ana", "error"),
            ("grant_type=password&username=ana", "error"),
        ]
    )
    func grants(body: String, expected: String) {
        let result: String
        do {
            switch try TokenGrant.parse(formBody: Array(body.utf8)) {
            case .password(let user, let password): result = "password \(user) \(password)"
            case .refreshToken(let token): result = "refresh \(token)"
            }
        } catch {
            result = "error"
            #expect(error.code == .invalidRequest)
        }
        #expect(result == expected)
    }

    @Test("form encoding round-trips reserved characters")
    func formRoundTrip() {
        let pairs = [("password", "p4ss w0rd+&=%/é"), ("grant_type", "password")]
        let decoded = FormEncoding.decode(Array(FormEncoding.encode(pairs)))
        #expect(decoded["password"] == "p4ss w0rd+&=%/é")
    }

    @Test(
        "HTTP dates format and parse as IMF-fixdate",
        arguments: [
            (784_111_777.0, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (0.0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (1_709_251_199.0, "Thu, 29 Feb 2024 23:59:59 GMT"),
        ]
    )
    func httpDates(seconds: Double, text: String) {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: seconds)) == text)
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: seconds))
    }

    @Test(
        "malformed HTTP dates are rejected",
        arguments: [
            "", "yesterday", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
        ]
    )
    func badDates(_ text: String) { #expect(HTTPDate.parse(text) == nil) }

    @Test("base64 matches Foundation for every length up to 40")
    func base64() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...40 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64.encode(bytes)
            #expect(text == Data(bytes).base64EncodedString())
            #expect(Base64.decode(text) == bytes)
        }
        #expect(Base64.decode("ab$d") == nil)
    }

    @Test(
        "full-jitter backoff stays within its exponential ceiling and the cap",
        arguments: [1, 2, 3, 8, 40]
    )
    func backoff(retry: Int) {
        let policy = RetryPolicy(
            maxAttempts: 5,
            baseDelay: .milliseconds(100),
            maxDelay: .seconds(2)
        )
        var generator = SystemRandomNumberGenerator()
        let ceiling = min(2.0, 0.1 * pow(2, Double(retry - 1)))
        let waits = (0..<200).map { _ in
            policy.backoff(retry: retry, using: &generator).timeInterval
        }
        #expect(waits.allSatisfy { $0 >= 0 && $0 <= ceiling + 1e-9 })
        #expect(Set(waits).count > 100)  // jittered, not fixed
    }

    @Test(
        "only idempotent methods, or a request with Idempotency-Key, are retryable",
        arguments: [
            ("GET", false, true), ("PUT", false, true), ("DELETE", false, true),
            ("POST", false, false), ("POST", true, true), ("PATCH", false, false),
        ]
    )
    func idempotency(method: String, keyed: Bool, retryable: Bool) {
        var request = URLRequest(url: URL(string: "http://x.example/")!)
        request.httpMethod = method
        if keyed { request.setValue("k1", forHTTPHeaderField: "Idempotency-Key") }
        #expect(RetryPolicy.isIdempotent(request) == retryable)
    }

    @Test(
        "origins compare scheme, host and port with default ports",
        arguments: [
            ("http://a.example/x", "http://a.example:80/y", true),
            ("http://a.example/", "https://a.example/", false),
            ("http://a.example:8080/", "http://a.example:8081/", false),
            ("http://A.example/", "http://a.EXAMPLE/", true),
            ("http://a.example/", "http://b.example/", false),
        ]
    )
    func origins(lhs: String, rhs: String, same: Bool) {
        #expect(Origin.same(URL(string: lhs), URL(string: rhs)) == same)
    }

    @Test("problem documents carry stable type URIs")
    func problems() throws {
        let rejection = SignatureRejection(reason: .replayedNonce, keyID: "k")
        let decoded = try JSONDecoder().decode(
            ProblemDetails.self,
            from: rejection.problem.jsonData()
        )
        #expect(decoded.type == "https://shopfloor.dev/problems/auth/invalid-signature")
        #expect(decoded.status == 401)
        #expect(
            SignatureRejection(reason: .expired).problem.type
                == AuthProblemType.signatureOutsideWindow
        )
    }
}

@Suite("Token store")
struct TokenStoreTests {
    @Test("credentials round-trip through a 0600 file and removal signs out")
    func roundTrip() throws {
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = TokenStore(directory: directory)
        #expect(try store.load() == nil)
        let credentials = StoredCredentials(
            accessToken: "at",
            refreshToken: "rt",
            expiresAt: Date(timeIntervalSince1970: 1_800_000_000),
            signingKeyID: "k",
            signingKey: Data(repeating: 3, count: 32).base64EncodedString(),
            serverURL: "http://127.0.0.1:1",
            username: "ana",
            lifetime: 900
        )
        try store.save(credentials)
        #expect(try store.load() == credentials)
        let mode =
            try FileManager.default.attributesOfItem(atPath: store.fileURL.path)[.posixPermissions]
            as? NSNumber
        #expect(mode?.intValue == 0o600)
        try store.remove()
        #expect(try store.load() == nil)
        try store.remove()  // idempotent
    }

    @Test("a damaged token file is a typed error that names the file")
    func damaged() throws {
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = TokenStore(directory: directory)
        try Data("{not json".utf8).write(to: store.fileURL)
        let error = #expect(throws: AuthError.self) { try store.load() }
        #expect(error?.code == .tokenStore)
        #expect(error?.message.contains("auth-token.json") == true)
    }

    @Test("the suite store lives in the SharedDefaults container of the suite")
    func suiteContainer() throws {
        let root = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try TokenStore.suite("retail", root: root)
        #expect(
            store.directory.standardizedFileURL.path
                == root.appendingPathComponent("retail").standardizedFileURL.path
        )
        #expect(throws: AuthError.self) { try TokenStore.suite("../escape", root: root) }
    }

    @Test("the lease is exclusive until released or expired")
    func lease() throws {
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = TokenStore(directory: directory)
        let now = Date()
        let held = try #require(try store.tryAcquireLease(duration: 5, now: now))
        #expect(try store.tryAcquireLease(duration: 5, now: now + 1) == nil)
        #expect(try store.tryAcquireLease(duration: 5, now: now + 6) != nil)  // expired: taken over
        store.releaseLease(held)  // not the holder any more: leaves the new lease alone
        #expect(try store.tryAcquireLease(duration: 5, now: now + 7) == nil)
    }

    @Test("a token lifetime shorter than the margin refreshes at half-life, not every call")
    func refreshMargin() {
        let now = Date()
        var credentials = StoredCredentials(
            accessToken: "a",
            refreshToken: "r",
            expiresAt: now + 20,
            signingKeyID: "k",
            signingKey: "",
            serverURL: "",
            username: nil,
            lifetime: 30
        )
        #expect(!credentials.needsRefresh(now: now, margin: 60))
        credentials.expiresAt = now + 10
        #expect(credentials.needsRefresh(now: now, margin: 60))
    }
}
