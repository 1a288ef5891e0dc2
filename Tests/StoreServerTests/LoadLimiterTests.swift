import Foundation
import Models
import Testing

@testable import StoreServer

/// Issue 25, point 3: the one load-limiting component shared by the sign-in caps, the
/// connection caps and load shedding (scoped permits: `LoadLimiterTests` in SignInAttackTests).
@Suite("the load limiter: caps per key and in all, held permits, rates and their answers")
struct LoadLimiterBehaviourTests {
    @Test("a held permit counts until released, once, and a key of an uncapped kind counts in all")
    func heldPermits() throws {
        let limiter = LoadLimiter(limits: .init(total: 3, perKey: ["address": 2], retryAfter: 4))
        let first = try limiter.permit(for: ["address": "10.0.0.1"])
        let second = try limiter.permit(for: ["address": "10.0.0.1"])
        #expect(throws: LoadLimiter.Refusal(kind: "address", retryAfter: 4)) {
            try limiter.permit(for: ["address": "10.0.0.1"])
        }
        // A trusted proxy is keyed by no address: only the total applies.
        let proxy = try limiter.permit(for: [:])
        #expect(limiter.held() == 3)
        #expect(throws: LoadLimiter.Refusal(kind: nil, retryAfter: 4)) {
            try limiter.permit(for: ["address": "10.0.0.2"])
        }
        first.release()
        first.release()
        #expect(limiter.held() == 2 && limiter.held(kind: "address", key: "10.0.0.1") == 1)
        let third = try limiter.permit(for: ["address": "10.0.0.2"])
        second.release()
        proxy.release()
        third.release()
        #expect(limiter.held() == 0 && limiter.held(kind: "address", key: "10.0.0.2") == 0)
    }

    @Test("a permit nobody released is given back when it goes away")
    func permitDeinit() throws {
        let limiter = LoadLimiter(limits: .init(total: 1, perKey: [:]))
        do {
            let permit = try limiter.permit(for: ["address": "a"])
            #expect(limiter.held() == 1)
            _ = permit
        }
        #expect(limiter.held() == 0)
        #expect(throws: Never.self) { try limiter.permit(for: ["address": "b"]).release() }
    }

    @Test("a rate admits a burst, then one per interval, and tells how long to wait")
    func rates() throws {
        let limiter = LoadLimiter(
            limits: .init(
                total: 1,
                perKey: [:],
                rates: ["address": .init(perSecond: 0.5, burst: 3)]
            )
        )
        let start = ContinuousClock.now
        for _ in 0..<3 { try limiter.admit(for: ["address": "a"], at: start) }
        #expect(throws: LoadLimiter.Refusal(kind: "address", retryAfter: 2, reason: .rate)) {
            try limiter.admit(for: ["address": "a"], at: start)
        }
        // Another key, and a kind without a rate, are not touched by it.
        try limiter.admit(for: ["address": "b", "user": "ana"], at: start)
        #expect(throws: LoadLimiter.Refusal(kind: "address", retryAfter: 1, reason: .rate)) {
            try limiter.admit(for: ["address": "a"], at: start + .seconds(1))
        }
        try limiter.admit(for: ["address": "a"], at: start + .seconds(2))
        #expect(throws: LoadLimiter.Refusal.self) {
            try limiter.admit(for: ["address": "a"], at: start + .seconds(2))
        }
        // A quiet spell refills the burst, never beyond it.
        for _ in 0..<3 { try limiter.admit(for: ["address": "a"], at: start + .seconds(60)) }
        #expect(throws: LoadLimiter.Refusal.self) {
            try limiter.admit(for: ["address": "a"], at: start + .seconds(60))
        }
        // Rates hold no permits.
        #expect(limiter.held() == 0)
    }

    @Test("a refusal by rate in one kind takes nothing from the other kinds")
    func rateAllOrNothing() throws {
        let limiter = LoadLimiter(
            limits: .init(
                total: 1,
                perKey: [:],
                rates: [
                    "address": .init(perSecond: 1, burst: 1), "user": .init(perSecond: 1, burst: 2),
                ]
            )
        )
        let now = ContinuousClock.now
        try limiter.admit(for: ["address": "a", "user": "ana"], at: now)
        // The address is used up: refused, and ana's second token is kept.
        #expect(throws: LoadLimiter.Refusal(kind: "address", retryAfter: 1, reason: .rate)) {
            try limiter.admit(for: ["address": "a", "user": "ana"], at: now)
        }
        try limiter.admit(for: ["address": "b", "user": "ana"], at: now)
    }

    @Test(
        "refusals answer 503 unavailable for the process, 429 for one key, both with Retry-After",
        arguments: [
            (LoadLimiter.Refusal(kind: nil, retryAfter: 2), 503, ProblemType.unavailable),
            (LoadLimiter.Refusal(kind: "address", retryAfter: 1), 429, ProblemType.rateLimited),
            (
                LoadLimiter.Refusal(kind: "user", retryAfter: 7, reason: .rate), 429,
                ProblemType.rateLimited
            ),
        ]
    )
    func answers(refusal: LoadLimiter.Refusal, status: Int, type: String) throws {
        let error = APIError.refused(refusal, what: "sign-ins")
        #expect(error.problem.status == status && refusal.status == status)
        #expect(error.problem.type == type)
        #expect(error.headers.contains { $0.0 == .retryAfter && $0.1 == "\(refusal.retryAfter)" })
        #expect(error.problem.detail?.contains("sign-ins") == true)
        #expect(error.problem.detail?.hasSuffix("retry in \(refusal.retryAfter) s") == true)
    }
}
