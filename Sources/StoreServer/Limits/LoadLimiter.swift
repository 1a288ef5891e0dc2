public import Foundation
internal import Synchronization

/// Caps how much work runs at once in this process: per key (a user, a client address, a
/// connection's peer) and in all. A request that would go over a cap is refused at once, never
/// queued, so a flood from one key costs the others nothing but the refusals; the caller answers
/// a refusal with 429 (one key's cap: that client should slow down) or 503 (the whole process's
/// cap: anyone may retry), both with `Retry-After`.
///
/// Sign-in uses one for its password hashing (per user, per address, in all); the same type
/// serves per-client connection caps and load shedding:
///
/// ```swift
/// let hashing = LoadLimiter(limits: .init(total: 8, perKey: ["user": 2, "address": 4]))
/// let answer = try await hashing.withPermit(for: ["user": name, "address": peer]) {
///     try await check(password)
/// }
/// ```
public final class LoadLimiter: Sendable {
    /// The caps.
    public struct Limits: Sendable, Equatable {
        /// Permits held at once in all.
        public var total: Int
        /// Permits held at once per key, by the key's kind (`user`, `address`, …).
        public var perKey: [String: Int]
        /// Seconds a refused client is told to wait (`Retry-After`).
        public var retryAfter: Int

        /// Caps of `total` in all and `perKey` per key kind.
        public init(total: Int, perKey: [String: Int], retryAfter: Int = 1) {
            self.total = total
            self.perKey = perKey
            self.retryAfter = retryAfter
        }
    }

    /// Why a permit was refused.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The kind of key whose cap was reached (`user`, `address`), or nil for the total.
        public var kind: String?
        /// Seconds to wait before retrying.
        public var retryAfter: Int

        /// True when the whole process is at its cap (answer 503), false for one key (429).
        public var isOverloaded: Bool { kind == nil }

        /// `too many at once for this user`, `the server is at its limit`.
        public var description: String {
            kind.map { "too many requests at once for this \($0)" }
                ?? "the server is at its limit of requests at once"
        }
    }

    /// The caps in force.
    public let limits: Limits
    private struct State {
        var total = 0
        var held: [String: Int] = [:]
    }
    private let state = Mutex(State())

    /// A limiter with `limits`.
    public init(limits: Limits) { self.limits = limits }

    /// Runs `body` holding one permit for each of `keys` (kind → key) and one of the total;
    /// the permits are given back when `body` ends, however it ends.
    /// - Throws: ``Refusal`` when a cap is reached (nothing is held then), or `body`'s error.
    public func withPermit<T>(for keys: [String: String], _ body: () async throws -> T)
        async throws -> T
    {
        let taken = try acquire(keys)
        defer { release(taken) }
        return try await body()
    }

    /// Permits held now: in all, and for `kind` = `key`.
    public func held(kind: String? = nil, key: String? = nil) -> Int {
        state.withLock { state in
            guard let kind, let key else { return state.total }
            return state.held[kind + ":" + key] ?? 0
        }
    }

    private func acquire(_ keys: [String: String]) throws(Refusal) -> [String] {
        let names = keys.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.key + ":" + $0.value) }
        let refusal: Refusal? = state.withLock { state in
            if state.total >= limits.total {
                return Refusal(kind: nil, retryAfter: limits.retryAfter)
            }
            for (kind, name) in names {
                if let cap = limits.perKey[kind], state.held[name, default: 0] >= cap {
                    return Refusal(kind: kind, retryAfter: limits.retryAfter)
                }
            }
            state.total += 1
            for (_, name) in names { state.held[name, default: 0] += 1 }
            return nil
        }
        if let refusal { throw refusal }
        return names.map(\.1)
    }

    private func release(_ names: [String]) {
        state.withLock { state in
            state.total -= 1
            for name in names {
                let left = state.held[name, default: 1] - 1
                state.held[name] = left > 0 ? left : nil
            }
        }
    }
}
