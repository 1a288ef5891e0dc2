import Auth
import Foundation
import Models
import Testing

@testable import StoreServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 24, point 3: sign-in holds under parallel guessing and floods, and lock-out cannot be
/// turned into a weapon.
@Suite("sign-in under attack", .serialized)
struct SignInAttackTests {
    static func attempt(
        _ server: TestServer,
        user: String,
        password: String,
        from address: String? = nil
    ) async throws -> HTTPReply {
        try await PlainHTTP.form(
            server.url.appendingPathComponent("v1/auth/token"),
            [("grant_type", "password"), ("username", user), ("password", password)],
            headers: address.map { ["X-Forwarded-For": $0] } ?? [:]
        )
    }

    @Test(
        "of 60 parallel wrong guesses at one user from one address at most 5 reach the password check",
        arguments: DatabaseKind.allCases
    )
    func parallelGuesses(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind)
        do {
            let replies = try await withThrowingTaskGroup(of: HTTPReply.self) { group in
                for guess in 0..<60 {
                    group.addTask {
                        try await Self.attempt(
                            server,
                            user: DemoData.username,
                            password: "guess \(guess)"
                        )
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // A 401 is a password that was checked; everything else was refused before it.
            let checked = replies.filter { $0.status == 401 }.count
            #expect(checked <= 5, "\(checked) guesses reached the password check")
            #expect(checked >= 1)
            #expect(
                replies.allSatisfy { [401, 429].contains($0.status) },
                "\(Set(replies.map(\.status)))"
            )
            #expect(
                replies.filter { $0.status == 429 }.allSatisfy { $0.header("retry-after") != nil }
            )
            // The right password from the same address is locked out for the window too.
            let locked = try await Self.attempt(
                server,
                user: DemoData.username,
                password: DemoData.password
            )
            #expect(locked.status == 429 || checked < 5)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "the right password from a clean address signs in after 5 failures elsewhere; X-Forwarded-For counts only from a trusted proxy",
        arguments: DatabaseKind.allCases
    )
    func lockoutIsPerAddress(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(kind, trustedProxies: ["127.0.0.1/32"])
        do {
            for guess in 1...5 {
                let wrong = try await Self.attempt(
                    server,
                    user: DemoData.username,
                    password: "wrong \(guess)",
                    from: "203.0.113.66"
                )
                #expect(wrong.status == 401)
            }
            let attacker = try await Self.attempt(
                server,
                user: DemoData.username,
                password: DemoData.password,
                from: "203.0.113.66"
            )
            #expect(attacker.status == 429)
            let owner = try await Self.attempt(
                server,
                user: DemoData.username,
                password: DemoData.password,
                from: "198.51.100.7"
            )
            #expect(owner.status == 200, "\(owner.text)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        // Without a trusted proxy the header is the client's word: all from the one peer.
        let plain = try await TestServer.start(kind)
        do {
            for guess in 1...5 {
                _ = try await Self.attempt(
                    plain,
                    user: DemoData.username,
                    password: "wrong \(guess)",
                    from: "203.0.113.\(guess)"
                )
            }
            let forged = try await Self.attempt(
                plain,
                user: DemoData.username,
                password: DemoData.password,
                from: "198.51.100.7"
            )
            #expect(forged.status == 429, "a forged X-Forwarded-For escaped the lock-out")
        } catch {
            await plain.stop()
            throw error
        }
        await plain.stop()
    }

    @Test(
        "20 sign-ins during a flood of 150 parallel attempts from another address all succeed: the flood never holds their permits",
        arguments: DatabaseKind.allCases
    )
    func floodDoesNotDelayOthers(kind: DatabaseKind) async throws {
        // Auth's floor, so every check costs real hashing (the flood's user included).
        let cost = PasswordHasher.minimumIterations
        let location = try await TestDatabases.make(kind)
        let admin = try await StoreAdmin.open(
            location,
            passwordIterations: cost,
            logger: TestDatabases.logger
        )
        _ = try await admin.addUser(
            "flooded",
            password: "flooded secret",
            role: .associate,
            stores: ["perth-hay-street"]
        )
        _ = try await admin.addUser(
            "worker",
            password: "worker secret",
            role: .associate,
            stores: ["berlin-kurfuerstendamm"]
        )
        await admin.close()
        let server = try await TestServer.start(
            kind,
            location: location,
            passwordIterations: cost,
            trustedProxies: ["127.0.0.1/32"]
        )
        do {
            let flood = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for guess in 0..<150 {
                        group.addTask {
                            try await Self.attempt(
                                server,
                                user: "flooded",
                                password: "guess \(guess)",
                                from: "203.0.113.99"
                            ).status
                        }
                    }
                    return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                }
            }
            // The limiter never queues: a sign-in that gets a permit hashes at once, one that
            // does not is refused (429/503). So 20 answers of 200 while the flood runs mean
            // the flood held none of their permits; their time on 2 cores (≤ 1 s each, the
            // issue's target) is a figure for the load benchmark, not for a test.
            for index in 0..<20 {
                let reply = try await Self.attempt(
                    server,
                    user: "worker",
                    password: "worker secret",
                    from: "198.51.100.\(10 + index)"
                )
                #expect(reply.status == 200, "\(reply.text)")
            }
            let statuses = try await flood.value
            #expect(Set(statuses.keys).isSubset(of: [401, 429, 503]), "\(statuses)")
            #expect(statuses[401, default: 0] <= 5, "\(statuses)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

@Suite("the load limiter and trusted proxies")
struct LoadLimiterTests {
    @Test(
        "permits are capped per key and in all, refused at once, and given back however the work ends"
    )
    func caps() async throws {
        let limiter = LoadLimiter(limits: .init(total: 3, perKey: ["user": 1, "address": 2]))
        let (holding, release) = AsyncStream<Void>.makeStream()
        let (started, signal) = AsyncStream<Void>.makeStream()
        let first = Task {
            try await limiter.withPermit(for: ["user": "ana", "address": "a"]) {
                signal.yield()
                for await _ in holding {}
            }
        }
        var iterator = started.makeAsyncIterator()
        await iterator.next()
        await #expect(throws: LoadLimiter.Refusal(kind: "user", retryAfter: 1)) {
            try await limiter.withPermit(for: ["user": "ana", "address": "b"]) {}
        }
        try await limiter.withPermit(for: ["user": "ben", "address": "a"]) {
            #expect(limiter.held(kind: "address", key: "a") == 2)
            await #expect(throws: LoadLimiter.Refusal(kind: "address", retryAfter: 1)) {
                try await limiter.withPermit(for: ["user": "cy", "address": "a"]) {}
            }
            _ = try await limiter.withPermit(for: ["user": "cy", "address": "c"]) {
                await #expect(throws: LoadLimiter.Refusal(kind: nil, retryAfter: 1)) {
                    try await limiter.withPermit(for: ["user": "dee", "address": "d"]) {}
                }
            }
        }
        struct Failure: Error {}
        await #expect(throws: Failure.self) {
            try await limiter.withPermit(for: ["user": "eve", "address": "e"]) { throw Failure() }
        }
        #expect(limiter.held() == 1 && limiter.held(kind: "user", key: "eve") == 0)
        release.finish()
        try await first.value
        #expect(limiter.held() == 0)
    }

    @Test("forwarded addresses and schemes are believed from trusted proxies only")
    func proxies() throws {
        let proxies = TrustedProxies([
            try #require(TrustedProxies.Range("10.0.0.0/8")),
            try #require(TrustedProxies.Range("2001:db8::/32")),
        ])
        #expect(
            proxies.clientAddress(peer: "10.1.2.3", forwardedFor: ["198.51.100.7"])
                == "198.51.100.7"
        )
        #expect(
            proxies.clientAddress(
                peer: "10.1.2.3",
                forwardedFor: ["6.6.6.6, 198.51.100.7, 10.9.9.9"]
            ) == "198.51.100.7"
        )
        #expect(
            proxies.clientAddress(peer: "192.0.2.1", forwardedFor: ["198.51.100.7"]) == "192.0.2.1"
        )
        #expect(
            proxies.clientAddress(peer: "2001:db8::1", forwardedFor: ["not an address"])
                == "2001:db8::1"
        )
        #expect(proxies.scheme(peer: "10.0.0.1", forwardedProto: "https") == "https")
        #expect(proxies.scheme(peer: "192.0.2.1", forwardedProto: "https") == "http")
        // A server serving TLS itself: its own connections are https, whatever they claim.
        #expect(
            proxies.scheme(peer: "192.0.2.1", forwardedProto: "http", direct: "https") == "https"
        )
        #expect(proxies.trusts("::ffff:10.0.0.5"))
        #expect(
            TrustedProxies.Range("10.0.0.0/33") == nil && TrustedProxies.Range("nonsense") == nil
        )
        #expect(HealthController.isLoopback("127.0.0.1") && HealthController.isLoopback("::1"))
        #expect(!HealthController.isLoopback("192.0.2.1"))
    }
}
