internal import Synchronization

/// The server's one load-limiting component: how much work runs at once in this process, per
/// key (a user, a client address) and in all, and how fast one key may start work. Whatever
/// would go over a limit is refused at once, never queued, so a flood from one key costs the
/// others nothing but the refusals. A ``Refusal`` says how the caller answers: 503 when the
/// whole process is at its cap (load shedding: anyone may retry soon), 429 when one key is
/// over its own cap or rate (that client should slow down), both with `Retry-After`.
///
/// Three users share it: the sign-in caps (password checks at once per user, per address and
/// in all), the connection caps (connections held per client address and in all, answered
/// with 503) and rate limits per key.
///
/// ```swift
/// let hashing = LoadLimiter(limits: .init(total: 8, perKey: ["user": 2, "address": 4]))
/// let answer = try await hashing.withPermit(for: ["user": name, "address": peer]) {
///     try await check(password)
/// }
/// let connections = LoadLimiter(limits: .init(total: 10_000, perKey: ["address": 128]))
/// let permit = try connections.permit(for: ["address": peer])  // held until release()
/// ```
///
/// A key of a kind without a cap (or a rate) in ``Limits`` is counted in the total only: a
/// caller exempts a key from its kind's cap by leaving it out (a trusted load balancer is not
/// one client).
public final class LoadLimiter: Sendable {
    /// The caps.
    public struct Limits: Sendable, Equatable {
        /// Permits held at once in all.
        public var total: Int
        /// Permits held at once per key, by the key's kind (`user`, `address`, …).
        public var perKey: [String: Int]
        /// Seconds a refused client is told to wait (`Retry-After`) when it was refused for
        /// holding too much at once.
        public var retryAfter: Int
        /// How often one key may be admitted (``LoadLimiter/admit(for:at:)``), by the key's
        /// kind; kinds without a rate are never refused by rate.
        public var rates: [String: Rate]

        /// Caps of `total` in all and `perKey` per key kind; `rates` per key kind.
        public init(
            total: Int,
            perKey: [String: Int],
            retryAfter: Int = 1,
            rates: [String: Rate] = [:]
        ) {
            self.total = total
            self.perKey = perKey
            self.retryAfter = retryAfter
            self.rates = rates
        }
    }

    /// A sustained rate with a burst: a token bucket of `burst` tokens refilled at `perSecond`.
    public struct Rate: Sendable, Equatable {
        /// Admissions per second, sustained.
        public var perSecond: Double
        /// Admissions in a row after a quiet spell.
        public var burst: Int

        /// `perSecond` sustained, `burst` at once.
        public init(perSecond: Double, burst: Int) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    /// Why a permit or an admission was refused.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was exceeded.
        public enum Reason: Sendable, Equatable {
            /// Too much held at once (a cap).
            case atOnce
            /// Admitted too often (a rate).
            case rate
        }

        /// The kind of key whose cap or rate was reached (`user`, `address`), or nil for the
        /// total.
        public var kind: String?
        /// Seconds to wait before retrying.
        public var retryAfter: Int
        /// What was exceeded.
        public var reason: Reason = .atOnce

        /// True when the whole process is at its cap (answer 503), false for one key (429).
        public var isOverloaded: Bool { kind == nil }

        /// The HTTP status to answer with: 503 for the whole process, 429 for one key.
        public var status: Int { isOverloaded ? 503 : 429 }

        /// `too many requests at once for this user`, `the server is at its limit …`.
        public var description: String {
            switch (kind, reason) {
            case (nil, _): "the server is at its limit of requests at once"
            case (let kind?, .atOnce): "too many requests at once for this \(kind)"
            case (let kind?, .rate): "too many requests in a row for this \(kind)"
            }
        }
    }

    /// Permits held by one holder (a connection) until it gives them back with ``release()``
    /// (or is deinitialised). Releasing twice gives back once.
    public final class Permit: Sendable {
        private let limiter: LoadLimiter
        private let names: Mutex<[String]?>

        fileprivate init(limiter: LoadLimiter, names: [String]) {
            self.limiter = limiter
            self.names = Mutex(names)
        }

        /// Gives the permits back (once).
        public func release() {
            guard let names = names.withLock({ names in names.take() }) else { return }
            limiter.release(names)
        }

        deinit { release() }
    }

    /// The caps in force.
    public let limits: Limits
    private struct State {
        var total = 0
        var held: [String: Int] = [:]
        var buckets: [String: Bucket] = [:]
    }
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }
    private let state = Mutex(State())
    /// Rate buckets kept at most; above it, buckets that refilled completely are forgotten
    /// (a forgotten bucket is indistinguishable from a full one).
    private static let trackedBuckets = 50_000

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

    /// Takes one permit for each of `keys` (kind → key) and one of the total, held until the
    /// returned ``Permit`` is released: for what outlives a call, such as a connection.
    /// - Throws: ``Refusal`` when a cap is reached (nothing is held then).
    public func permit(for keys: [String: String]) throws(Refusal) -> Permit {
        Permit(limiter: self, names: try acquire(keys))
    }

    /// Admits one more request for each of `keys` whose kind has a ``Rate``, or refuses it
    /// with the seconds until that key's next admission; a refusal takes nothing.
    /// - Throws: ``Refusal`` (`reason` ``Refusal/Reason/rate``) when a key's rate is used up.
    public func admit(for keys: [String: String], at now: ContinuousClock.Instant = .now)
        throws(Refusal)
    {
        let rated = keys.sorted(by: { $0.key < $1.key }).compactMap { kind, key in
            limits.rates[kind].map { (kind: kind, name: kind + ":" + key, rate: $0) }
        }
        guard !rated.isEmpty else { return }
        let refusal: Refusal? = state.withLock { state in
            var refilled: [(String, Bucket)] = []
            for entry in rated {
                var bucket =
                    state.buckets[entry.name]
                    ?? Bucket(tokens: Double(entry.rate.burst), updated: now)
                let elapsed = max(0, Self.seconds(now - bucket.updated))
                bucket.tokens = min(
                    Double(entry.rate.burst),
                    bucket.tokens + elapsed * entry.rate.perSecond
                )
                bucket.updated = now
                guard bucket.tokens >= 1 else {
                    let wait = (1 - bucket.tokens) / max(entry.rate.perSecond, .ulpOfOne)
                    return Refusal(
                        kind: entry.kind,
                        retryAfter: max(1, Int(wait.rounded(.up))),
                        reason: .rate
                    )
                }
                bucket.tokens -= 1
                refilled.append((entry.name, bucket))
            }
            for (name, bucket) in refilled { state.buckets[name] = bucket }
            if state.buckets.count > Self.trackedBuckets { forgetFullBuckets(&state, now: now) }
            return nil
        }
        if let refusal { throw refusal }
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

    fileprivate func release(_ names: [String]) {
        state.withLock { state in
            state.total -= 1
            for name in names {
                let left = state.held[name, default: 1] - 1
                state.held[name] = left > 0 ? left : nil
            }
        }
    }

    private func forgetFullBuckets(_ state: inout State, now: ContinuousClock.Instant) {
        state.buckets = state.buckets.filter { name, bucket in
            let kind = String(name.prefix(while: { $0 != ":" }))
            guard let rate = limits.rates[kind] else { return false }
            let tokens = bucket.tokens + Self.seconds(now - bucket.updated) * rate.perSecond
            return tokens < Double(rate.burst)
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
