import Crypto
import Foundation
import Logging
import Testing

@testable import Auth

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let quietLogger = Logger(label: "quiet", factory: { _ in SwiftLogNoOpLogHandler() })

/// Verifies signed headers at `now`: `nil` when accepted, else the rejection's reason.
func outcome(
    _ verifier: SignatureVerifier,
    _ headers: SignatureHeaders,
    method: String = "GET",
    uri: String,
    body: [UInt8] = [],
    key: SigningKey,
    now: Int64
) async -> SignatureRejection.Reason? {
    do {
        _ = try await verifier.verify(
            method: method,
            targetURI: uri,
            headers: SignedRequestHeaders(headers),
            body: body,
            key: key,
            now: Date(timeIntervalSince1970: TimeInterval(now))
        )
        return nil
    } catch {
        return error.reason
    }
}

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
    func changes(_ change: Change) async throws {
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
        let reason = await outcome(
            verifier,
            headers,
            method: method,
            uri: target,
            body: body,
            key: key,
            now: now
        )
        #expect(reason == expected)
    }

    @Test(
        "a signature is accepted from 300 s before to 30 s after the server's time",
        arguments: [(-300, true), (30, true), (0, true), (-301, false), (31, false), (300, false)]
    )
    func window(offset: Int64, accepted: Bool) async {
        let verifier = SignatureVerifier(logger: quietLogger)
        let now: Int64 = 1_700_000_000
        let headers = RequestSigner(key: key).sign(
            method: "GET",
            targetURI: uri,
            body: [UInt8](),
            created: now + offset
        )
        let reason = await outcome(verifier, headers, uri: uri, key: key, now: now)
        #expect((reason == nil) == accepted)
        if !accepted { #expect(reason == (offset < 0 ? .expired : .createdInFuture)) }
    }

    @Test("a future window over 30 s is capped at 30 s")
    func futureWindowCap() {
        #expect(SignatureVerifier(futureWindow: 300, logger: quietLogger).futureWindow == 30)
        #expect(SignatureVerifier(futureWindow: 5, logger: quietLogger).futureWindow == 5)
    }

    @Test("a key over its nonce quota is cut off by its own oldest signature time; other keys pass")
    func perKeyQuota() async throws {
        let store = InMemoryNonceStore(perKeyQuota: 3)
        let verifier = SignatureVerifier(store: store, logger: quietLogger)
        let other = try SigningKey(id: "sk-other", secret: [UInt8](repeating: 2, count: 32))
        let now: Int64 = 1_700_000_000
        let signed = (0..<5).map { i in
            RequestSigner(key: key).sign(
                method: "GET",
                targetURI: uri,
                body: [UInt8](),
                created: now - 10 + Int64(i)
            )
        }
        for headers in signed {
            #expect(await outcome(verifier, headers, uri: uri, key: key, now: now) == nil)
        }
        #expect(store.count == 3)
        #expect(store.cutOff(keyID: key.id) == now - 9)
        // Dropped early, but refused by the key's cut-off: no replay slips through.
        #expect(
            await outcome(verifier, signed[0], uri: uri, key: key, now: now) == .nonceCacheOverflow
        )
        #expect(
            await outcome(verifier, signed[1], uri: uri, key: key, now: now) == .nonceCacheOverflow
        )
        #expect(await outcome(verifier, signed[4], uri: uri, key: key, now: now) == .replayedNonce)
        // A fresh request of the same key signed before its cut-off is refused too ...
        let old = RequestSigner(key: key).sign(
            method: "GET",
            targetURI: uri,
            body: [UInt8](),
            created: now - 100
        )
        #expect(await outcome(verifier, old, uri: uri, key: key, now: now) == .nonceCacheOverflow)
        // ... but another key's requests, even older ones, are not affected.
        let otherSigner = RequestSigner(key: other)
        for offset in [-299, -100, 0] as [Int64] {  // within its own quota of 3
            let headers = otherSigner.sign(
                method: "GET",
                targetURI: uri,
                body: [UInt8](),
                created: now + offset
            )
            #expect(await outcome(verifier, headers, uri: uri, key: other, now: now) == nil)
        }
        #expect(store.cutOff(keyID: other.id) == nil)
        // A cut-off request is answered with "sign again" (signature-outside-window).
        #expect(
            SignatureRejection(reason: .nonceCacheOverflow).problem.type
                == AuthProblemType.signatureOutsideWindow
        )
    }

    @Test("expired nonces are dropped as time moves on, and idle keys are forgotten")
    func nonceExpiry() async {
        let store = InMemoryNonceStore()
        let now: Int64 = 1_700_000_000
        for i in 0..<10 {
            let outcome = await
                (try? store.record(
                    keyID: "k\(i % 2)",
                    nonce: "n\(i)",
                    created: now,
                    expiresAt: now + 300,
                    now: now
                ))
            #expect(outcome == .recorded)
        }
        #expect(store.count == 10)
        #expect(store.keyCount == 2)
        // Still kept at its last valid second: a replay is refused.
        #expect(
            await
                (try? store.record(
                    keyID: "k0",
                    nonce: "n0",
                    created: now,
                    expiresAt: now + 300,
                    now: now + 300
                )) == .replay
        )
        // The sweep runs once a minute of verifier time.
        _ = try? await store.record(
            keyID: "k2",
            nonce: "x",
            created: now + 361,
            expiresAt: now + 661,
            now: now + 361
        )
        #expect(store.count == 1)
        #expect(store.keyCount == 1)
    }

    @Test("a failing nonce store is a 503, never an acceptance")
    func failingNonceStore() async {
        struct Down: NonceStore {
            struct Failure: Error {}
            func record(keyID: String, nonce: String, created: Int64, expiresAt: Int64, now: Int64)
                async throws -> NonceOutcome
            { throw Failure() }
        }
        let verifier = SignatureVerifier(store: Down(), logger: quietLogger)
        let now: Int64 = 1_700_000_000
        let headers = RequestSigner(key: key).sign(
            method: "GET",
            targetURI: uri,
            body: [UInt8](),
            created: now
        )
        #expect(await outcome(verifier, headers, uri: uri, key: key, now: now) == .storeUnavailable)
        #expect(SignatureRejection(reason: .storeUnavailable).problem.status == 503)
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
        let hasher = PasswordHasher.insecureForTesting(iterations: 2_000)
        let stored = try hasher.hash("correct horse battery staple")
        #expect(stored.hasPrefix("$pbkdf2-sha256$i=2000$"))
        #expect(try hasher.verify("correct horse battery staple", against: stored))
        #expect(try !hasher.verify("correct horse battery stapler", against: stored))
        #expect(try hasher.hash("same") != hasher.hash("same"))  // salted
        #expect(!hasher.needsRehash(stored))
        #expect(PasswordHasher.insecureForTesting(iterations: 4_000).needsRehash(stored))
        // A higher-cost hasher still verifies old hashes: the cost comes from the string.
        #expect(
            try PasswordHasher.insecureForTesting(iterations: 4_000).verify(
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
            try PasswordHasher.insecureForTesting(iterations: 1_000).verify("x", against: encoded)
        }
        #expect(error?.code == .invalidPasswordHash)
    }

    @Test("the hasher's cost has a floor; only the explicit test API goes below it")
    func costFloor() {
        #expect(PasswordHasher(iterations: 1).iterations == PasswordHasher.minimumIterations)
        #expect(PasswordHasher().iterations == 600_000)
        #expect(PasswordHasher.insecureForTesting(iterations: 1_000).iterations == 1_000)
    }

    @Test("an unknown user is refused after the same PBKDF2 work as a known one")
    func dummyHash() throws {
        let hasher = PasswordHasher.insecureForTesting(iterations: 1_000)
        let stored = try hasher.hash("secret-1")
        #expect(try hasher.verifyOrDummy("secret-1", against: stored))
        #expect(try !hasher.verifyOrDummy("secret-2", against: stored))
        #expect(try !hasher.verifyOrDummy("secret-1", against: nil))
    }

    @Test("tokens are issued, refreshed with rotation, and revoked per session")
    func tokens() async throws {
        let issuer = TokenIssuer(accessTokenLifetime: 60, logger: quietLogger)
        let now = Date()
        let first = try await issuer.issue(subject: "ana", now: now)
        let session = try await issuer.authenticate(
            authorization: "Bearer " + first.accessToken,
            now: now
        )
        #expect(session.subject == "ana")
        #expect(session.signingKey.id == first.signingKeyID)
        let expired = await #expect(throws: TokenRejection.self) {
            try await issuer.authenticate(accessToken: first.accessToken, now: now + 61)
        }
        #expect(expired?.reason == .expired)
        let malformed = await #expect(throws: TokenRejection.self) {
            try await issuer.authenticate(authorization: first.accessToken, now: now)
        }
        #expect(malformed?.reason == .malformed)
        let second = try await issuer.refresh(refreshToken: first.refreshToken, now: now)
        #expect(second.signingKeyID == first.signingKeyID)
        #expect(second.refreshToken != first.refreshToken)
        let wrongKind = await #expect(throws: TokenRejection.self) {
            try await issuer.authenticate(accessToken: second.refreshToken, now: now)
        }
        #expect(wrongKind?.reason == .malformed)
        #expect(try await issuer.revoke(token: second.refreshToken, now: now))
        let revoked = await #expect(throws: TokenRejection.self) {
            try await issuer.authenticate(accessToken: second.accessToken, now: now)
        }
        // Revoking a session deletes its tokens: its access token is no longer known.
        #expect(revoked?.reason == .unknown)
        #expect(try await !issuer.revoke(token: "nonsense", now: now))
    }

    @Test("a rotated refresh token is exchanged again within the grace period (lost answer)")
    func rotationGrace() async throws {
        let issuer = TokenIssuer(rotationGrace: 30, logger: quietLogger)
        let now = Date()
        let first = try await issuer.issue(subject: "ana", now: now)
        let lost = try await issuer.refresh(refreshToken: first.refreshToken, now: now + 1)
        // The answer was lost: the client presents the old token again, 20 s later.
        let again = try await issuer.refresh(refreshToken: first.refreshToken, now: now + 21)
        #expect(again.refreshToken != lost.refreshToken)
        #expect(
            try await issuer.authenticate(accessToken: again.accessToken, now: now + 22).subject
                == "ana"
        )
        // The chain goes on from the new pair.
        let next = try await issuer.refresh(refreshToken: again.refreshToken, now: now + 100)
        #expect(
            try await issuer.authenticate(accessToken: next.accessToken, now: now + 101).subject
                == "ana"
        )
    }

    @Test(
        "with a rotation secret a refresh token exchanged again within the grace gets the same pair: one chain, never two"
    )
    func idempotentRotation() async throws {
        let store = InMemorySessionStore()
        let issuer = TokenIssuer(
            store: store,
            rotationGrace: 30,
            rotationSecret: Array(repeating: 7, count: 32),
            logger: quietLogger
        )
        let now = Date()
        let first = try await issuer.issue(subject: "ana", now: now)
        let lost = try await issuer.refresh(refreshToken: first.refreshToken, now: now + 1)
        let again = try await issuer.refresh(refreshToken: first.refreshToken, now: now + 21)
        #expect(again.refreshToken == lost.refreshToken && again.accessToken == lost.accessToken)
        #expect(again.expiresIn == lost.expiresIn - 20)
        let racing = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try? await issuer.refresh(refreshToken: lost.refreshToken, now: now + 40)
                        .refreshToken
                }
            }
            return await group.reduce(into: Set<String?>()) { $0.insert($1) }
        }
        #expect(racing.count == 1 && racing.first! != nil)
        // A different issuer secret (another deployment) derives other tokens.
        let other = TokenIssuer(rotationSecret: Array(repeating: 8, count: 32), logger: quietLogger)
        let theirs = try await other.issue(subject: "ana", now: now)
        let theirNext = try await other.refresh(refreshToken: theirs.refreshToken, now: now + 1)
        #expect(theirNext.refreshToken != theirs.refreshToken)
    }

    @Test("no token outlives its session's absolute lifetime, however often it is refreshed")
    func absoluteLifetime() async throws {
        let issuer = TokenIssuer(accessTokenLifetime: 60, sessionLifetime: 100, logger: quietLogger)
        let now = Date()
        let first = try await issuer.issue(subject: "ana", now: now)
        let second = try await issuer.refresh(refreshToken: first.refreshToken, now: now + 50)
        #expect(second.expiresIn == 50)
        #expect(
            try await issuer.authenticate(accessToken: second.accessToken, now: now + 99).subject
                == "ana"
        )
        let late = await #expect(throws: TokenRejection.self) {
            try await issuer.refresh(refreshToken: second.refreshToken, now: now + 101)
        }
        #expect(late?.reason == .expired)
        await #expect(throws: TokenRejection.self) {
            try await issuer.authenticate(accessToken: second.accessToken, now: now + 101)
        }
    }

    @Test("reuse of a rotated refresh token after the grace revokes the whole session chain")
    func reuseRevokesChain() async throws {
        let issuer = TokenIssuer(rotationGrace: 30, logger: quietLogger)
        let now = Date()
        let first = try await issuer.issue(subject: "ana", now: now)
        let second = try await issuer.refresh(refreshToken: first.refreshToken, now: now + 1)
        let third = try await issuer.refresh(refreshToken: second.refreshToken, now: now + 60)
        // Someone replays the first refresh token long after its rotation.
        let reuse = await #expect(throws: TokenRejection.self) {
            try await issuer.refresh(refreshToken: first.refreshToken, now: now + 120)
        }
        #expect(reuse?.reason == .reused)
        #expect(reuse?.grantProblem.type == AuthProblemType.invalidGrant)
        #expect(reuse?.grantProblem.status == 400)
        // Every token of the chain is dead now, the newest included.
        for token in [second.accessToken, third.accessToken] {
            await #expect(throws: TokenRejection.self) {
                try await issuer.authenticate(accessToken: token, now: now + 121)
            }
        }
        await #expect(throws: TokenRejection.self) {
            try await issuer.refresh(refreshToken: third.refreshToken, now: now + 122)
        }
    }

    @Test("concurrent exchanges of one refresh token: one rotation, all within the grace succeed")
    func concurrentRefresh() async throws {
        let store = InMemorySessionStore()
        let issuer = TokenIssuer(store: store, logger: quietLogger)
        let now = Date()
        let first = try await issuer.issue(subject: "ana", now: now)
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    (try? await issuer.refresh(refreshToken: first.refreshToken, now: now)) != nil
                }
            }
            var all: [Bool] = []
            for await ok in group { all.append(ok) }
            return all
        }
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0 })
        let record = try #require(
            try await store.token(digest: TokenIssuer.digest(first.refreshToken))
        )
        #expect(record.rotatedAt == now)
    }

    @Test("a failing session store is 'unavailable' (503), never a refusal that signs out")
    func failingSessionStore() async throws {
        struct Down: SessionStore {
            struct Failure: Error {}
            func insert(session: SessionRecord, tokens: [TokenRecord]) async throws {
                throw Failure()
            }
            func insert(tokens: [TokenRecord]) async throws { throw Failure() }
            func session(id: String) async throws -> SessionRecord? { throw Failure() }
            func token(digest: String) async throws -> TokenRecord? { throw Failure() }
            func markRotated(digest: String, at now: Date) async throws -> Date { throw Failure() }
            func revoke(sessionID: String, at now: Date) async throws { throw Failure() }
            func purge(expiredBefore date: Date) async throws { throw Failure() }
        }
        let issuer = TokenIssuer(store: Down(), logger: quietLogger)
        let refused = await #expect(throws: TokenRejection.self) {
            try await issuer.refresh(refreshToken: "whatever")
        }
        #expect(refused?.reason == .unavailable)
        #expect(refused?.isTransient == true)
        #expect(refused?.grantProblem.status == 503)
        #expect(refused?.problem.status == 503)
        let issue = await #expect(throws: TokenRejection.self) {
            try await issuer.issue(subject: "ana")
        }
        #expect(issue?.reason == .unavailable)
    }

    @Test("the in-memory session store purges expired tokens and dead sessions")
    func sessionPurge() async throws {
        let store = InMemorySessionStore()
        let issuer = TokenIssuer(
            store: store,
            accessTokenLifetime: 10,
            refreshTokenLifetime: 100,
            logger: quietLogger
        )
        let now = Date()
        let revoked = try await issuer.issue(subject: "a", now: now)
        _ = try await issuer.issue(subject: "b", now: now)
        try await issuer.revoke(token: revoked.accessToken, now: now)
        #expect(store.counts.sessions == 2)
        #expect(store.counts.tokens == 2)
        try await issuer.purge(now: now + 50)
        #expect(store.counts.sessions == 1)
        #expect(store.counts.tokens == 1)
        try await issuer.purge(now: now + 101)
        #expect(store.counts.sessions == 0)
        #expect(store.counts.tokens == 0)
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

    @Test("a damaged token file is a sign-in to make again, naming the file")
    func damaged() throws {
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = TokenStore(directory: directory)
        try Data("{not json".utf8).write(to: store.fileURL)
        let error = #expect(throws: AuthError.self) { try store.load() }
        #expect(error?.code == .signInRequired)
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
    func lease() async throws {
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = TokenStore(directory: directory)
        let now = Date()
        let held = try #require(try await store.tryAcquireLease(duration: 5, now: now))
        #expect(try await store.tryAcquireLease(duration: 5, now: now + 1) == nil)
        // Expired: taken over.
        #expect(try await store.tryAcquireLease(duration: 5, now: now + 6) != nil)
        await store.releaseLease(held)  // not the holder any more: leaves the new lease alone
        #expect(try await store.tryAcquireLease(duration: 5, now: now + 7) == nil)
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
