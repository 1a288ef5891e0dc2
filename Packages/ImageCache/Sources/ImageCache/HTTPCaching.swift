public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The directives of a `Cache-Control` response header (RFC 9111 §5.2.2) that a client
/// image cache acts on.
public struct CacheControl: Sendable, Hashable {
    /// `max-age=N`: fresh for N seconds from the response's generation.
    public var maxAge: Int?
    /// `s-maxage=N`: `max-age` for shared caches.
    public var sharedMaxAge: Int?
    /// `no-store`: never stored, in memory or on disk.
    public var noStore = false
    /// `no-cache`: stored, but revalidated before every use, and never served stale.
    public var noCache = false
    /// `must-revalidate`: once stale, never served without a successful revalidation (so
    /// not when offline).
    public var mustRevalidate = false
    /// `private`: for one user's caches only (stored unless the cache is shared).
    public var isPrivate = false
    /// `public`.
    public var isPublic = false
    /// `immutable`: the body never changes while fresh.
    public var immutable = false

    /// No directives.
    public init() {}

    /// Parses a header value; unknown directives are ignored, and a malformed `max-age`
    /// counts as 0 (stale), as RFC 9111 asks.
    public init(_ value: String?) {
        guard let value else { return }
        for directive in Self.split(value) {
            let parts = directive.split(separator: "=", maxSplits: 1)
            guard let rawName = parts.first else { continue }
            let name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
            var argument: String?
            if parts.count == 2 {
                var text = parts[1].trimmingCharacters(in: .whitespaces)
                if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 {
                    text = String(text.dropFirst().dropLast())
                }
                argument = text
            }
            switch name {
            case "max-age": maxAge = Self.seconds(argument, combining: maxAge)
            case "s-maxage": sharedMaxAge = Self.seconds(argument, combining: sharedMaxAge)
            case "no-store": noStore = true
            // Qualified forms (`no-cache="Set-Cookie"`) concern header fields this cache
            // never stores, so only the bare directive counts.
            case "no-cache": if argument == nil { noCache = true }
            case "must-revalidate", "proxy-revalidate": mustRevalidate = true
            case "private": if argument == nil { isPrivate = true }
            case "public": isPublic = true
            case "immutable": immutable = true
            default: continue
            }
        }
    }

    /// Delta-seconds: digits only; a malformed value is 0, and of two values the smaller wins.
    private static func seconds(_ text: String?, combining existing: Int?) -> Int {
        var value = 0
        if let text, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // Values past 2^31 mean "forever" (RFC 9111 §1.2.2).
            value = Int(text.prefix(10)).map { min($0, Int(Int32.max)) } ?? Int(Int32.max)
        }
        if let existing { return min(existing, value) }
        return value
    }

    /// Splits on commas outside quoted strings.
    private static func split(_ value: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        for character in value {
            if character == "\"" { quoted.toggle() }
            if character == "," && !quoted {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }
}

/// What the cache keeps of a response to decide freshness and revalidate it: the caching
/// header fields as received and when the response arrived.
public struct HTTPCacheMetadata: Sendable, Hashable {
    /// The header fields kept, by lowercase name: `etag`, `last-modified`, `cache-control`,
    /// `expires`, `date`, `age`, `content-type`.
    public private(set) var headers: [String: String]
    /// When the response was received, on the cache's clock.
    public private(set) var responseTime: Date
    /// The parsed `Cache-Control`.
    public private(set) var cacheControl: CacheControl
    /// How long the response stays fresh from its generation, in seconds (RFC 9111 §4.2.1:
    /// `max-age`, else `Expires` − `Date`, else 10% of the time since `Last-Modified`
    /// capped at a day, else 0).
    public private(set) var freshnessLifetime: TimeInterval
    /// How old the response already was when it arrived, in seconds (from `Date` and `Age`).
    public private(set) var initialAge: TimeInterval

    static let keptFields = [
        "etag", "last-modified", "cache-control", "expires", "date", "age", "content-type",
    ]
    /// Per-response fields: a 304 brings its own or none.
    static let perResponseFields: Set<String> = ["date", "age"]

    /// Builds the metadata of a response received at `responseTime`.
    ///
    /// - Parameter isSharedCache: whether `s-maxage` applies (a cache shared by users).
    public init(headers: [String: String], responseTime: Date, isSharedCache: Bool = false) {
        var kept: [String: String] = [:]
        for (name, value) in headers {
            let lower = name.lowercased()
            if Self.keptFields.contains(lower) { kept[lower] = value }
        }
        self.headers = kept
        self.responseTime = responseTime
        cacheControl = CacheControl(kept["cache-control"])
        freshnessLifetime = 0
        initialAge = 0
        computeFreshness(isSharedCache: isSharedCache)
    }

    /// Builds the metadata of an HTTP response received at `responseTime`.
    public init(response: HTTPURLResponse, responseTime: Date, isSharedCache: Bool = false) {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            headers[name] = value
        }
        self.init(headers: headers, responseTime: responseTime, isSharedCache: isSharedCache)
    }

    private mutating func computeFreshness(isSharedCache: Bool) {
        let date = headers["date"].flatMap(HTTPDate.parse) ?? responseTime
        let apparentAge = max(0, responseTime.timeIntervalSince(date))
        let ageValue =
            headers["age"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        initialAge = max(apparentAge, max(0, ageValue))
        if isSharedCache, let shared = cacheControl.sharedMaxAge {
            freshnessLifetime = TimeInterval(shared)
        } else if let maxAge = cacheControl.maxAge {
            freshnessLifetime = TimeInterval(maxAge)
        } else if let expires = headers["expires"] {
            // An invalid Expires (such as "0") means already expired.
            freshnessLifetime =
                HTTPDate.parse(expires).map { max(0, $0.timeIntervalSince(date)) } ?? 0
        } else if let lastModified = headers["last-modified"].flatMap(HTTPDate.parse) {
            freshnessLifetime = min(max(0, date.timeIntervalSince(lastModified)) * 0.1, 86_400)
        } else {
            freshnessLifetime = 0
        }
    }

    /// The `ETag`, when the server sent one.
    public var etag: String? { headers["etag"] }
    /// The `Last-Modified` value, when the server sent one.
    public var lastModified: String? { headers["last-modified"] }
    /// The `Content-Type`, when the server sent one.
    public var contentType: String? { headers["content-type"] }

    /// The response's age at `now`, in seconds.
    public func age(at now: Date) -> TimeInterval {
        initialAge + max(0, now.timeIntervalSince(responseTime))
    }

    /// When the response stops being fresh.
    public var expiresAt: Date {
        responseTime.addingTimeInterval(freshnessLifetime - initialAge)
    }

    /// Whether it may be used at `now` without asking the server (`no-cache` never is).
    public func isFresh(at now: Date) -> Bool {
        !cacheControl.noCache && freshnessLifetime > age(at: now)
    }

    /// Whether a stale copy may be served when the server cannot be reached (not under
    /// `no-cache` or `must-revalidate`, RFC 9111 §4.2.4).
    public var mayServeStale: Bool { !cacheControl.noCache && !cacheControl.mustRevalidate }

    /// Whether a conditional request can revalidate it.
    public var hasValidators: Bool { etag != nil || lastModified != nil }

    /// Whether a response with this metadata may be stored.
    public func isStorable(isSharedCache: Bool) -> Bool {
        !cacheControl.noStore && !(isSharedCache && cacheControl.isPrivate)
    }

    /// The conditional request headers that revalidate it.
    public var validatorHeaders: [String: String] {
        var result: [String: String] = [:]
        if let etag { result["If-None-Match"] = etag }
        if let lastModified { result["If-Modified-Since"] = lastModified }
        return result
    }

    /// The metadata after a `304 Not Modified` received at `responseTime`: the 304's
    /// caching fields replace the stored ones (RFC 9111 §4.3.4) and freshness starts again.
    public func updated(
        with notModified: HTTPURLResponse,
        responseTime: Date,
        isSharedCache: Bool = false
    )
        -> HTTPCacheMetadata
    {
        var merged = headers
        for field in Self.perResponseFields { merged[field] = nil }
        for (name, value) in notModified.allHeaderFields {
            guard let name = (name as? String)?.lowercased(), let value = value as? String,
                Self.keptFields.contains(name), name != "content-type"
            else { continue }
            merged[name] = value
        }
        return HTTPCacheMetadata(
            headers: merged,
            responseTime: responseTime,
            isSharedCache: isSharedCache
        )
    }

    // MARK: Storage

    /// A compact binary form for the disk cache's metadata blob.
    func encoded() -> Data {
        var bytes: [UInt8] = [1]
        appendUInt64(&bytes, responseTime.timeIntervalSince1970.bitPattern)
        bytes.append(UInt8(headers.count))
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            appendString(&bytes, name)
            appendString(&bytes, value)
        }
        return Data(bytes)
    }

    /// Reads ``encoded()``; nil for anything else.
    init?(encoded data: Data, isSharedCache: Bool = false) {
        let bytes = [UInt8](data)
        guard bytes.count >= 10, bytes[0] == 1 else { return nil }
        var offset = 1
        guard let bits = readUInt64(bytes, &offset) else { return nil }
        let time = Double(bitPattern: bits)
        guard time.isFinite else { return nil }
        let count = Int(bytes[offset])
        offset += 1
        var headers: [String: String] = [:]
        for _ in 0..<count {
            guard let name = readString(bytes, &offset), let value = readString(bytes, &offset)
            else { return nil }
            headers[name] = value
        }
        guard offset == bytes.count else { return nil }
        self.init(
            headers: headers,
            responseTime: Date(timeIntervalSince1970: time),
            isSharedCache: isSharedCache
        )
    }
}

private func appendUInt64(_ bytes: inout [UInt8], _ value: UInt64) {
    for shift in stride(from: 0, to: 64, by: 8) {
        bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
    }
}

private func appendString(_ bytes: inout [UInt8], _ text: String) {
    let utf8 = Array(text.utf8.prefix(0xFFFF))
    bytes.append(UInt8(utf8.count & 0xFF))
    bytes.append(UInt8(utf8.count >> 8))
    bytes += utf8
}

private func readUInt64(_ bytes: [UInt8], _ offset: inout Int) -> UInt64? {
    guard offset + 8 <= bytes.count else { return nil }
    var value: UInt64 = 0
    for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
    offset += 8
    return value
}

private func readString(_ bytes: [UInt8], _ offset: inout Int) -> String? {
    guard offset + 2 <= bytes.count else { return nil }
    let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
    offset += 2
    guard offset + length <= bytes.count else { return nil }
    defer { offset += length }
    return String(decoding: bytes[offset..<(offset + length)], as: UTF8.self)
}

/// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms.
enum HTTPDate {
    private static let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]

    static func parse(_ text: String) -> Date? {
        let cleaned = String(text.lowercased().map { $0 == "," || $0 == "-" ? " " : $0 })
        let tokens = cleaned.split(separator: " ").map(String.init)
        var day: Int?
        var month: Int?
        var year: Int?
        var time: (Int, Int, Int)?
        for token in tokens {
            if token.contains(":") {
                let parts = token.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 3 else { return nil }
                time = (parts[0], parts[1], parts[2])
            } else if let number = Int(token) {
                if token.count <= 2 && day == nil {
                    day = number
                } else if token.count == 4 || token.count == 2 {
                    year = number
                } else {
                    return nil
                }
            } else if let index = months.firstIndex(of: String(token.prefix(3))), token.count == 3 {
                month = index + 1
            }
        }
        guard var year, let month, let day, let (hour, minute, second) = time,
            (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second)
        else { return nil }
        if year < 100 { year += year < 70 ? 2000 : 1900 }
        // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
