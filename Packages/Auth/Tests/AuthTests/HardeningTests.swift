import Crypto
import Foundation
import Logging
import RawStructuredFieldValues
import Testing

@_spi(Benchmarks) @testable import Auth

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let quiet = Logger(label: "quiet", factory: { _ in SwiftLogNoOpLogHandler() })

@Suite("Redaction of every type that holds a secret")
struct RedactionTests {
    /// Key bytes that stand out in any rendering: base64 `p6en…`, decimal `167, 167`.
    static let keyBytes = [UInt8](repeating: 0xA7, count: 32)
    static let password = "hunter2-correct-horse"
    static let accessToken = "AT-5f1e0c7b9d2a4e6f8a1b3c5d7e9f0a2b"
    static let refreshToken = "RT-0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d"

    static var secrets: [String] {
        [
            password, accessToken, refreshToken, Base64.encode(keyBytes),
            String(Base64.encode(keyBytes).prefix(12)), "167, 167", "0xa7", "a7a7a7",
        ]
    }

    /// Every way a value gets printed: interpolation, describing, reflecting, dump, a Mirror
    /// walk, and a log line with the value as metadata.
    static func renderings(of value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        var mirrored = ""
        func walk(_ mirror: Mirror, depth: Int) {
            guard depth < 6 else { return }
            for child in mirror.children {
                mirrored += "\(child.label ?? "-")=\(child.value);"
                walk(Mirror(reflecting: child.value), depth: depth + 1)
            }
        }
        walk(Mirror(reflecting: value), depth: 0)
        let capture = LogCapture()
        capture.logger.info("value", metadata: ["value": "\(value)"])
        capture.logger.info("\(String(reflecting: value))")
        return [
            "\(value)", String(describing: value), String(reflecting: value), dumped, mirrored,
        ] + capture.lines
    }

    static func values() throws -> [(String, Any)] {
        let key = try SigningKey(id: "sk-redact", secret: keyBytes)
        let stored = StoredCredentials(
            accessToken: accessToken,
            refreshToken: refreshToken,
            expiresAt: Date(timeIntervalSince1970: 1_800_000_000),
            signingKeyID: "sk-redact",
            signingKey: Base64.encode(keyBytes),
            serverURL: "https://store.example",
            username: "ana",
            lifetime: 900
        )
        let response = TokenResponse(
            accessToken: accessToken,
            refreshToken: refreshToken,
            expiresIn: 900,
            tokenType: "Bearer",
            signingKeyID: "sk-redact",
            signingKey: Base64.encode(keyBytes)
        )
        return [
            ("TokenGrant.password", TokenGrant.password(username: "ana", password: password)),
            ("TokenGrant.refreshToken", TokenGrant.refreshToken(refreshToken)),
            ("TokenResponse", response),
            ("StoredCredentials", stored),
            ("SigningKey", key),
            ("RequestSigner", RequestSigner(key: key)),
            (
                "SessionRecord",
                SessionRecord(id: "s1", subject: "ana", signingKey: key, createdAt: Date())
            ),
            (
                "AuthSession",
                AuthSession(
                    id: "s1",
                    subject: "ana",
                    signingKey: key,
                    accessTokenExpiresAt: Date()
                )
            ),
            (
                "ActiveCredentials",
                ActiveCredentials(credentials: stored, signer: RequestSigner(key: key), stamp: nil)
            ),
            ("Optional<StoredCredentials>", Optional(stored) as Any),
            ("[TokenResponse]", [response]),
        ]
    }

    @Test("no rendering of a secret-holding value shows the secret")
    func redacted() throws {
        for (name, value) in try Self.values() {
            let renderings = Self.renderings(of: value)
            #expect(renderings.count >= 7)
            for text in renderings {
                for secret in Self.secrets {
                    #expect(!text.contains(secret), "\(name) shows '\(secret)' in: \(text)")
                }
            }
            // Still useful: the non-secret identity is there.
            #expect(
                renderings[0].contains("sk-redact") || renderings[0].contains("ana")
                    || renderings[0].contains("<redacted>"),
                "\(name): \(renderings[0])"
            )
        }
    }

    @Test("the token response still encodes its secrets on the wire")
    func wireUnchanged() throws {
        let (_, value) = try #require(try Self.values().first { $0.0 == "TokenResponse" })
        let json = String(decoding: try #require(value as? TokenResponse).jsonData(), as: UTF8.self)
        #expect(json.contains(Self.accessToken))
        #expect(json.contains(Self.refreshToken))
    }
}

@Suite("Strict formats: base64, HTTP dates, Retry-After")
struct FormatTests {
    @Test(
        "base64 is strict: one alphabet, padding only at the end, canonical trailing bits",
        arguments: [
            ("AQID", [1, 2, 3] as [UInt8]?),
            ("AQI=", [1, 2]),
            ("AQ==", [1]),
            ("", []),
            ("+/+/", [251, 255, 191]),
            ("-_-_", nil),  // URL-safe alphabet
            ("+/-_", nil),  // mixed alphabets
            ("AQ=", nil),  // short padding
            ("AQ", nil),  // padding required
            ("AQ==AQ==", nil),  // padding in the middle
            ("AR==", nil),  // non-zero trailing bits
            ("AQI", nil),
            ("A", nil),
            (" AQID", nil),
            ("AQID\n", nil),
            ("AQ===", nil),
        ]
    )
    func strictBase64(_ text: String, _ expected: [UInt8]?) {
        #expect(Base64.decode(text) == expected)
    }

    @Test("unpadded base64 (the password hash form) refuses padding")
    func unpaddedBase64() {
        #expect(Base64.decode("AQI", padding: .absent) == [1, 2])
        #expect(Base64.decode("AQI=", padding: .absent) == nil)
        #expect(Base64.decode("AQ-", padding: .absent) == nil)
    }

    @Test(
        "HTTP dates parse in all three RFC 9110 forms",
        arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
            "Sunday, 06-Nov-94 08:49:37 GMT",  // obsolete RFC 850
            "Sun Nov  6 08:49:37 1994",  // ANSI C asctime()
        ]
    )
    func dateForms(_ text: String) {
        let now = Date(timeIntervalSince1970: 1_000_000_000)  // 2001: "94" is 1994
        #expect(HTTPDate.parse(text, now: now) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("an RFC 850 two-digit year is never more than 50 years ahead")
    func rfc850Years() {
        let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026
        let soon = HTTPDate.parse("Monday, 01-Jan-35 00:00:00 GMT", now: now)
        let past = HTTPDate.parse("Friday, 01-Jan-99 00:00:00 GMT", now: now)
        #expect(soon == Date(timeIntervalSince1970: 2_051_222_400))  // 2035
        #expect(past == Date(timeIntervalSince1970: 915_148_800))  // 1999
    }

    @Test(
        "malformed HTTP dates in any form are refused",
        arguments: [
            "Sun, 6 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov  6 08:49:37 94", "Sun Nov 32 08:49:37 1994", "Sun Nov  6 8:49:37 1994",
            "Sunday, 06-Nov-94 08:49:37 UTC", "Funday, 06-Nov-94 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:+7 GMT", "Sun, 06 Nov +994 08:49:37 GMT",
        ]
    )
    func badDateForms(_ text: String) { #expect(HTTPDate.parse(text) == nil) }

    struct FixedClock: AuthClock {
        var date: Date
        func now() -> Date { date }
    }

    @Test("Retry-After is read as seconds or as an HTTP date in any of its forms")
    func retryAfter() throws {
        let now = Date(timeIntervalSince1970: 784_111_777 - 30)
        let directory = try temporaryContainer()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = makeClient(
            URL(string: "https://store.example")!,
            directory,
            clock: FixedClock(date: now)
        )
        #expect(client.retryAfter("120") == .seconds(120))
        #expect(client.retryAfter(" 0 ") == .seconds(0))
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            #expect(client.retryAfter(form) == .seconds(30), "\(form)")
        }
        #expect(client.retryAfter("Sun, 06 Nov 1994 08:00:00 GMT") == .seconds(0))  // past
        for bad in ["-5", "1.5", "+3", "soon", "", "99999999999"] {
            #expect(client.retryAfter(bad) == nil, "\(bad)")
        }
    }
}

@Suite("Covered headers, fragments and the signature parser")
struct SignatureCoverageTests {
    let key = try! SigningKey(id: "sk-cover", secret: [UInt8](repeating: 5, count: 32))
    let uri = "https://store.example/v1/reservations/42"
    let now: Int64 = 1_790_000_000

    func verify(
        _ headers: SignatureHeaders,
        carrying covered: CoveredHeaders,
        body: [UInt8] = Array("{}".utf8)
    ) -> SignatureRejection.Reason? {
        do {
            _ = try SignatureVerifier(logger: quiet).check(
                method: "PATCH",
                targetURI: uri,
                headers: SignedRequestHeaders(headers, covering: covered),
                body: body,
                key: key,
                now: now
            )
            return nil
        } catch {
            return error.reason
        }
    }

    static let json = CoveredHeaders(contentType: "application/json")
    static let all = CoveredHeaders(
        contentType: "application/json",
        idempotencyKey: "k-9",
        ifMatch: "\"v7\""
    )

    @Test(
        "a header the request carries must be covered, and a covered one must be carried",
        arguments: [
            (all, all, nil),
            (json, json, nil),
            (CoveredHeaders.none, CoveredHeaders.none, nil),
            (CoveredHeaders.none, json, .uncoveredHeader),
            (json, all, .uncoveredHeader),
            (all, json, .wrongComponents),
            (json, CoveredHeaders.none, .wrongComponents),
            (json, CoveredHeaders(contentType: "text/plain"), .badSignature),
            (json, CoveredHeaders(contentType: "  application/json\t"), nil),  // OWS trimmed
            (
                all,
                CoveredHeaders(
                    contentType: "application/json",
                    idempotencyKey: "k-9",
                    ifMatch: "\"v8\""
                ), .badSignature
            ),
        ] as [(CoveredHeaders, CoveredHeaders, SignatureRejection.Reason?)]
    )
    func coverage(
        signed: CoveredHeaders,
        carried: CoveredHeaders,
        expected: SignatureRejection.Reason?
    ) {
        let headers = RequestSigner(key: key).sign(
            method: "PATCH",
            targetURI: uri,
            body: Array("{}".utf8),
            created: now,
            covering: signed
        )
        #expect(verify(headers, carrying: carried) == expected)
    }

    @Test(
        "component lists out of order, repeated or unknown are refused",
        arguments: [
            "\"@method\" \"@target-uri\" \"content-digest\" \"if-match\" \"content-type\"",
            "\"@method\" \"@target-uri\" \"content-digest\" \"content-type\" \"content-type\"",
            "\"@method\" \"@target-uri\" \"content-digest\" \"x-other\"",
            "\"@target-uri\" \"@method\" \"content-digest\"",
            "\"@method\" \"@target-uri\"",
        ]
    )
    func badComponentLists(_ list: String) {
        let signed = RequestSigner(key: key).sign(
            method: "PATCH",
            targetURI: uri,
            body: Array("{}".utf8),
            created: now,
            covering: Self.all
        )
        var headers = signed
        let original =
            "(\"@method\" \"@target-uri\" \"content-digest\" \"content-type\" \"idempotency-key\" \"if-match\")"
        #expect(headers.signatureInput.contains(original))
        headers.signatureInput = headers.signatureInput.replacingOccurrences(
            of: original,
            with: "(\(list))"
        )
        #expect(verify(headers, carrying: Self.all) == .wrongComponents)
    }

    @Test("a URLRequest is signed without its fragment, which is never sent")
    func fragmentDropped() throws {
        var request = URLRequest(url: URL(string: uri + "?x=1#top")!)
        request.httpMethod = "PATCH"
        request.httpBody = Data("{}".utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        RequestSigner(key: key).sign(&request, created: now)
        let headers = SignatureHeaders(
            signatureInput: try #require(request.value(forHTTPHeaderField: "Signature-Input")),
            signature: try #require(request.value(forHTTPHeaderField: "Signature")),
            contentDigest: try #require(request.value(forHTTPHeaderField: "Content-Digest"))
        )
        let result = Result { () throws(SignatureRejection) in
            try SignatureVerifier(logger: quiet).check(
                method: "PATCH",
                targetURI: uri + "?x=1",
                headers: SignedRequestHeaders(headers, covering: Self.json),
                body: Array("{}".utf8),
                key: key,
                now: now
            )
        }
        #expect((try? result.get()) != nil)
    }

    /// Deterministic pseudo-random numbers (SplitMix64), so a failure can be replayed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let interesting: [UInt8] = Array("\"();=,: \\a1-*?%é\t".utf8) + [0, 0x7F, 0xFF]

    static func mutate(_ text: String, using random: inout SplitMix) -> String {
        var bytes = Array(text.utf8)
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            guard !bytes.isEmpty else { break }
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0: bytes[at] = interesting.randomElement(using: &random)!
            case 1: bytes.remove(at: at)
            case 2: bytes.insert(interesting.randomElement(using: &random)!, at: at)
            case 3: bytes.removeSubrange(at...)  // truncate
            case 4:
                let end = min(bytes.count, at + Int.random(in: 1...12, using: &random))
                bytes.insert(contentsOf: bytes[at..<end], at: at)  // repeat a run
            default:
                bytes.insert(contentsOf: Array(", sig2=(\"@method\");created=1".utf8), at: at)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(
        "fuzz: 20,000 mutated signature headers never crash, never verify unless unchanged, and parse like RFC 8941"
    )
    func fuzzParser() throws {
        let signed = RequestSigner(key: key).sign(
            method: "PATCH",
            targetURI: uri,
            body: Array("{}".utf8),
            created: now,
            nonce: "0123456789abcdef0123456789abcdef",
            covering: Self.json
        )
        let originalParams = try #require(
            StructuredFieldReader.signatureParams("sig1", in: signed.signatureInput)?.text
        )
        let originalSignature = try #require(
            StructuredFieldReader.byteSequence("sig1", in: signed.signature)
        )
        var random = SplitMix(state: 0x5EED_0F_A11)
        var accepted = 0
        var parsed = 0
        for round in 0..<20_000 {
            var headers = signed
            if round % 2 == 0 {
                headers.signatureInput = Self.mutate(signed.signatureInput, using: &random)
            } else {
                headers.signature = Self.mutate(signed.signature, using: &random)
            }
            // 1. Verification passes only when the signed parts are byte for byte the same.
            if verify(headers, carrying: Self.json) == nil {
                accepted += 1
                #expect(
                    StructuredFieldReader.signatureParams("sig1", in: headers.signatureInput)?.text
                        == originalParams
                )
                #expect(
                    StructuredFieldReader.byteSequence("sig1", in: headers.signature)
                        == originalSignature
                )
            }
            // 2. What the hand parser accepts, the reference RFC 8941 parser reads the same.
            guard
                let ours = SignatureVerifier.parseSignatureMembers(
                    signatureInput: headers.signatureInput,
                    signature: headers.signature
                )
            else { continue }
            parsed += 1
            let reference = Self.referenceParse(headers)
            #expect(
                reference != nil,
                "only the hand parser accepts: \(headers.signatureInput) | \(headers.signature)"
            )
            guard let reference else { continue }
            #expect(reference.components == ours.components)
            #expect(reference.created == ours.created)
            #expect(reference.keyID == ours.keyID)
            #expect(reference.nonce == ours.nonce)
            #expect(reference.signature == ours.signature)
        }
        #expect(accepted > 0)  // some mutations leave sig1 intact (an added sig2 member)
        #expect(parsed > accepted)
    }

    /// The same fields read with swift-http-structured-headers.
    static func referenceParse(_ headers: SignatureHeaders) -> (
        components: [String], created: Int64, keyID: String, nonce: String, signature: [UInt8]
    )? {
        var inputParser = StructuredFieldValueParser(Array(headers.signatureInput.utf8))
        var signatureParser = StructuredFieldValueParser(Array(headers.signature.utf8))
        guard let input = try? inputParser.parseDictionaryFieldValue(),
            let signature = try? signatureParser.parseDictionaryFieldValue(),
            case .innerList(let list)? = input["sig1"],
            case .item(let item)? = signature["sig1"],
            case .undecodedByteSequence(let encoded) = item.rfc9651BareItem,
            let bytes = Base64.decode(encoded)
        else { return nil }
        var components: [String] = []
        for entry in list.bareInnerList {
            guard case .string(let name) = entry.rfc9651BareItem else { return nil }
            components.append(name)
        }
        var created: Int64?
        var keyID: String?
        var nonce: String?
        for (name, value) in list.rfc9651Parameters {
            switch (name, value) {
            case ("created", .integer(let value)): created = Int64(value)
            case ("keyid", .string(let value)): keyID = value
            case ("nonce", .string(let value)): nonce = value
            default: continue
            }
        }
        guard let created, let keyID, let nonce else { return nil }
        return (components, created, keyID, nonce, bytes)
    }
}
