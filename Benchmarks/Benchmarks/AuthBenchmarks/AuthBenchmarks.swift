@_spi(Benchmarks) import Auth
import Benchmark
import Crypto
import Foundation
import Logging
import RawStructuredFieldValues

// Request signing and verification per request against what a user would write instead:
// one plain HMAC-SHA256 (swift-crypto, key set up per call) of the same signature-base bytes.
// Each benchmark iteration handles 1,000 requests (scalingFactor .kilo), so the wall clock
// and malloc figures read per request. A short self-timed run first prints the p50 figures
// and the ratios side by side.
//
// Also: Auth's RFC 8941 reader against swift-http-structured-headers on the same
// Signature-Input and Signature headers (why Auth keeps its own), and a 100,000-request
// flood from one key into a fresh verifier (time, and the memory the verifier keeps).

private let secret = [UInt8](repeating: 7, count: 32)
private let key = try! SigningKey(id: "sk-bench", secret: secret)
private let signer = RequestSigner(key: key)
private let targetURI =
    "https://store.example:8443/v1/reservations?store=4f6f2a0e-5a41-4c1e-9d8a-1d2b3c4d5e6f&limit=50"
private let created: Int64 = 1_790_000_000
private let baseBytes: [UInt8] = Array(
    """
    "@method": GET
    "@target-uri": \(targetURI)
    "content-digest": \(RequestSigner.emptyBodyDigest)
    "@signature-params": ("@method" "@target-uri" "content-digest");created=1790000000;keyid="sk-bench";nonce="0123456789abcdef0123456789abcdef";alg="hmac-sha256"
    """.utf8
)
private let plainKey = SymmetricKey(data: secret)

@inline(never) private func signOnce(_ created: Int64) -> SignatureHeaders {
    signer.sign(
        method: "GET",
        targetURI: targetURI,
        contentDigest: RequestSigner.emptyBodyDigest,
        created: created
    )
}

@inline(never) private func plainHMAC() -> HashedAuthenticationCode<SHA256> {
    HMAC<SHA256>.authenticationCode(for: baseBytes, using: plainKey)
}

private func makeVerifier() -> SignatureVerifier {
    SignatureVerifier(
        window: 300,
        logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
    )
}

private func verify(_ verifier: SignatureVerifier, _ headers: SignatureHeaders, now: Int64) async
    -> Bool
{
    (try? await verifier.verify(
        method: "GET",
        targetURI: targetURI,
        headers: SignedRequestHeaders(headers),
        body: [UInt8](),
        key: key,
        now: Date(timeIntervalSince1970: TimeInterval(now))
    )) != nil
}

private let signedHeaders = signOnce(created)

@inline(never) private func parseWithAuth() -> Int {
    guard
        let parsed = SignatureVerifier.parseSignatureMembers(
            signatureInput: signedHeaders.signatureInput,
            signature: signedHeaders.signature
        )
    else { return 0 }
    return parsed.components.count + parsed.signature.count + Int(parsed.created & 1)
}

/// The same fields read with swift-http-structured-headers (then strict base64 of Foundation).
@inline(never) private func parseWithLibrary() -> Int {
    var inputParser = StructuredFieldValueParser(Array(signedHeaders.signatureInput.utf8))
    var signatureParser = StructuredFieldValueParser(Array(signedHeaders.signature.utf8))
    guard let input = try? inputParser.parseDictionaryFieldValue(),
        let signature = try? signatureParser.parseDictionaryFieldValue(),
        case .innerList(let list)? = input["sig1"],
        case .item(let item)? = signature["sig1"],
        case .undecodedByteSequence(let encoded) = item.rfc9651BareItem,
        let bytes = Data(base64Encoded: encoded)
    else { return 0 }
    var count = bytes.count
    for entry in list.bareInnerList {
        if case .string(let name) = entry.rfc9651BareItem { count += name.utf8.count }
    }
    for (name, value) in list.rfc9651Parameters {
        switch (name, value) {
        case ("created", .integer(let value)): count += Int(value & 1)
        case ("keyid", .string(let value)), ("nonce", .string(let value)): count += value.utf8.count
        default: continue
        }
    }
    return count
}

/// `count` valid signatures of one key, all at the far past edge of the window.
private func floodSignatures(_ count: Int) -> [SignatureHeaders] {
    (0..<count).map { index in signOnce(created - 290 + Int64(index % 3)) }
}

/// Feeds the flood into `verifier`; every signature must pass (each has a fresh nonce).
private func flood(_ verifier: SignatureVerifier, _ pending: [SignatureHeaders]) async {
    var accepted = 0
    for headers in pending where await verify(verifier, headers, now: created) { accepted += 1 }
    precondition(accepted == pending.count, "the flood was refused: \(pending.count - accepted)")
}

/// Median nanoseconds per call over 31 batches of `batch` calls.
private func medianNanoseconds(batch: Int = 2_000, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    var samples: [Double] = []
    for _ in 0..<31 {
        let elapsed = clock.measure { for _ in 0..<batch { body() } }
        samples.append(
            Double(elapsed.components.attoseconds) / 1e9 / Double(batch) + Double(
                elapsed.components.seconds
            ) * 1e9 / Double(batch)
        )
    }
    return samples.sorted()[samples.count / 2]
}

private func printComparison() async {
    var counter: Int64 = 0
    let sign = medianNanoseconds {
        counter += 1; blackHole(signOnce(created + counter % 100))
    }
    let plain = medianNanoseconds { blackHole(plainHMAC()) }
    // Verification: each batch verifies 2,000 fresh signatures made before the clock starts.
    let verifier = makeVerifier()
    let clock = ContinuousClock()
    var samples: [Double] = []
    for batch in 0..<31 {
        let now = created + Int64(batch)
        let pending = (0..<2_000).map { _ in signOnce(now) }
        let start = clock.now
        for headers in pending { blackHole(await verify(verifier, headers, now: now)) }
        let elapsed = clock.now - start
        samples.append(
            (Double(elapsed.components.seconds) * 1e18 + Double(elapsed.components.attoseconds))
                / 1e9 / 2_000
        )
    }
    let verifyTime = samples.sorted()[samples.count / 2]
    let ownParser = medianNanoseconds { blackHole(parseWithAuth()) }
    let libraryParser = medianNanoseconds { blackHole(parseWithLibrary()) }
    let pending = floodSignatures(100_000)
    let floodVerifier = makeVerifier()
    let floodStart = ContinuousClock.now
    await flood(floodVerifier, pending)
    let floodTime = ContinuousClock.now - floodStart
    let floodSeconds =
        Double(floodTime.components.seconds) + Double(floodTime.components.attoseconds) / 1e18
    func micro(_ ns: Double) -> String { String(format: "%.2f µs", ns / 1000) }
    print(
        "Auth p50 per request: sign \(micro(sign)), verify \(micro(verifyTime)), plain HMAC-SHA256 of the same bytes \(micro(plain))"
    )
    print(
        String(
            format:
                "Auth ratios: sign/plain HMAC %.1fx, verify/plain HMAC %.1fx (targets: sign ≤ 5 µs, verify ≤ 15 µs)",
            sign / plain,
            verifyTime / plain
        )
    )
    print(
        "Auth RFC 8941 parse of Signature-Input + Signature: own reader \(micro(ownParser)), swift-http-structured-headers \(micro(libraryParser)) (\(String(format: "%.1fx", libraryParser / ownParser)); verify with the library would be about \(micro(verifyTime - ownParser + libraryParser)))"
    )
    print(
        "Auth flood: 100,000 signatures of one key into a fresh verifier (signing excluded) in \(String(format: "%.2f s", floodSeconds)); memory the verifier keeps: see 'Memory leaked (bytes)' of the flood benchmark (target ≤ 16 MB)"
    )
}

let benchmarks = { @Sendable in
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 200,
        // More than 10% worse at p90 than Benchmarks/Thresholds fails `make bench`.
        thresholds: [
            .wallClock: .init(relative: [.p90: 10]),
            .mallocCountTotal: .init(relative: [.p90: 10]),
        ]
    )

    Benchmark(
        "Auth: sign a GET (RequestSigner)",
        closure: { benchmark in
            for i in benchmark.scaledIterations { blackHole(signOnce(created + Int64(i))) }
        },
        setup: { await printComparison() }
    )
    Benchmark("Auth: verify a signed GET (SignatureVerifier)") { benchmark async in
        let verifier = makeVerifier()
        let now = created + Int64(benchmark.currentIteration)
        let signed = benchmark.scaledIterations.map { _ in signOnce(now) }
        benchmark.startMeasurement()
        for headers in signed { blackHole(await verify(verifier, headers, now: now)) }
        benchmark.stopMeasurement()
    }
    Benchmark("Auth: sign + verify a GET") { benchmark async in
        let verifier = makeVerifier()
        let now = created + Int64(benchmark.currentIteration)
        for _ in benchmark.scaledIterations {
            blackHole(await verify(verifier, signOnce(now), now: now))
        }
    }
    Benchmark("Baseline: plain HMAC-SHA256 of the same bytes") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(plainHMAC()) }
    }
    Benchmark("Auth: RFC 8941 read of Signature-Input + Signature (own reader)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(parseWithAuth()) }
    }
    Benchmark("Alternative: the same read with swift-http-structured-headers") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(parseWithLibrary()) }
    }
    // Memory leaked (bytes) = bytes allocated minus bytes freed while measuring: what the
    // verifier's nonce store keeps for the flood (the verifier lives until after the stop).
    Benchmark(
        "Auth: 100,000-request flood from one key into a fresh verifier",
        configuration: .init(
            metrics: [.wallClock, .memoryLeakedBytes, .mallocCountTotal],
            scalingFactor: .one,
            maxDuration: .seconds(20),
            maxIterations: 3
        )
    ) { benchmark async in
        let pending = floodSignatures(100_000)
        let verifier = makeVerifier()
        benchmark.startMeasurement()
        await flood(verifier, pending)
        benchmark.stopMeasurement()
        withExtendedLifetime(verifier) {}
    }
}
