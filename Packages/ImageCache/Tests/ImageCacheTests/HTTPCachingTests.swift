import Foundation
import Testing

@testable import ImageCache

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("HTTP caching rules")
struct HTTPCachingTests {
    struct ControlCase: Sendable, CustomTestStringConvertible {
        var header: String
        var maxAge: Int?
        var noStore = false
        var noCache = false
        var mustRevalidate = false
        var isPrivate = false
        var testDescription: String { "\"\(header)\"" }
    }

    static let controlCases: [ControlCase] = [
        ControlCase(header: "max-age=3600", maxAge: 3600),
        ControlCase(
            header: "public, max-age=60, must-revalidate",
            maxAge: 60,
            mustRevalidate: true
        ),
        ControlCase(header: "NO-STORE", noStore: true),
        ControlCase(header: "no-cache", noCache: true),
        ControlCase(header: "no-cache=\"Set-Cookie, Foo\", max-age=5", maxAge: 5),
        ControlCase(header: "private, max-age=10", maxAge: 10, isPrivate: true),
        ControlCase(header: "max-age=abc", maxAge: 0),
        ControlCase(header: "max-age=\"30\"", maxAge: 30),
        ControlCase(header: "max-age=100, max-age=20", maxAge: 20),
        ControlCase(header: "max-age=99999999999999", maxAge: Int(Int32.max)),
        ControlCase(header: "proxy-revalidate", mustRevalidate: true),
        ControlCase(header: " , ,unknown-directive=1", maxAge: nil),
    ]

    @Test("Cache-Control directives are parsed", arguments: controlCases)
    func cacheControl(_ example: ControlCase) {
        let control = CacheControl(example.header)
        #expect(control.maxAge == example.maxAge)
        #expect(control.noStore == example.noStore)
        #expect(control.noCache == example.noCache)
        #expect(control.mustRevalidate == example.mustRevalidate)
        #expect(control.isPrivate == example.isPrivate)
    }

    static let dates: [(String, TimeInterval?)] = [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
        ("Sun Nov  6 08:49:37 1994", 784_111_777),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Wed, 29 Feb 2024 23:59:59 GMT", 1_709_251_199),
        ("0", nil),
        ("", nil),
        ("Sun, 06 Nov 1994 25:49:37 GMT", nil),
    ]

    @Test("HTTP dates are read in all three forms, and nonsense is refused", arguments: dates)
    func httpDates(text: String, expected: TimeInterval?) {
        #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == expected)
    }

    let received = Date(timeIntervalSince1970: 1_800_000_000)

    func imfDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    @Test("max-age counts from the response's generation, less the age it arrived with")
    func maxAgeWithAge() {
        let metadata = HTTPCacheMetadata(
            headers: ["Cache-Control": "max-age=100", "Age": "30", "Date": imfDate(received)],
            responseTime: received
        )
        #expect(metadata.isFresh(at: received.addingTimeInterval(69)))
        #expect(!metadata.isFresh(at: received.addingTimeInterval(71)))
        #expect(metadata.expiresAt == received.addingTimeInterval(70))
    }

    @Test("Expires minus Date gives the lifetime; an invalid Expires means already stale")
    func expires() {
        let valid = HTTPCacheMetadata(
            headers: [
                "Date": imfDate(received), "Expires": imfDate(received.addingTimeInterval(600)),
            ],
            responseTime: received
        )
        #expect(valid.freshnessLifetime == 600)
        #expect(valid.isFresh(at: received.addingTimeInterval(599)))
        let invalid = HTTPCacheMetadata(headers: ["Expires": "0"], responseTime: received)
        #expect(!invalid.isFresh(at: received))
    }

    @Test("without explicit freshness, 10% of the time since Last-Modified is used, at most a day")
    func heuristic() {
        let recent = HTTPCacheMetadata(
            headers: [
                "Date": imfDate(received),
                "Last-Modified": imfDate(received.addingTimeInterval(-1_000)),
            ],
            responseTime: received
        )
        #expect(recent.freshnessLifetime == 100)
        let old = HTTPCacheMetadata(
            headers: [
                "Date": imfDate(received),
                "Last-Modified": imfDate(received.addingTimeInterval(-10_000_000)),
            ],
            responseTime: received
        )
        #expect(old.freshnessLifetime == 86_400)
        let none = HTTPCacheMetadata(headers: ["ETag": "\"x\""], responseTime: received)
        #expect(!none.isFresh(at: received))
        #expect(none.hasValidators)
    }

    @Test("no-cache is never fresh and, like must-revalidate, never served stale")
    func noCacheAndMustRevalidate() {
        let noCache = HTTPCacheMetadata(
            headers: ["Cache-Control": "no-cache, max-age=600"],
            responseTime: received
        )
        #expect(!noCache.isFresh(at: received))
        #expect(!noCache.mayServeStale)
        let mustRevalidate = HTTPCacheMetadata(
            headers: ["Cache-Control": "max-age=1, must-revalidate"],
            responseTime: received
        )
        #expect(mustRevalidate.isFresh(at: received))
        #expect(!mustRevalidate.mayServeStale)
        #expect(
            HTTPCacheMetadata(headers: ["Cache-Control": "max-age=1"], responseTime: received)
                .mayServeStale
        )
    }

    @Test("private is stored by a user's cache, not by a shared one; no-store by neither")
    func storability() {
        let privateResponse = HTTPCacheMetadata(
            headers: ["Cache-Control": "private"],
            responseTime: received
        )
        #expect(privateResponse.isStorable(isSharedCache: false))
        #expect(!privateResponse.isStorable(isSharedCache: true))
        let noStore = HTTPCacheMetadata(
            headers: ["Cache-Control": "no-store"],
            responseTime: received
        )
        #expect(!noStore.isStorable(isSharedCache: false))
    }

    @Test("validators become If-None-Match and If-Modified-Since")
    func validators() {
        let metadata = HTTPCacheMetadata(
            headers: [
                "ETag": "\"v1\"", "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT", "X-Other": "1",
            ],
            responseTime: received
        )
        #expect(
            metadata.validatorHeaders == [
                "If-None-Match": "\"v1\"", "If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT",
            ]
        )
        #expect(metadata.headers["x-other"] == nil)
    }

    @Test("a 304 replaces the caching fields it carries and restarts freshness")
    func notModifiedUpdate() throws {
        let stored = HTTPCacheMetadata(
            headers: [
                "ETag": "\"v1\"", "Cache-Control": "max-age=60", "Content-Type": "image/png",
                "Age": "50",
            ],
            responseTime: received
        )
        let later = received.addingTimeInterval(3_600)
        let response = try #require(
            HTTPURLResponse(
                url: URL(string: "https://images.example/a.png")!,
                statusCode: 304,
                httpVersion: "HTTP/1.1",
                headerFields: [
                    "ETag": "\"v2\"", "Cache-Control": "max-age=120", "Content-Type": "text/plain",
                ]
            )
        )
        let updated = stored.updated(with: response, responseTime: later)
        #expect(updated.etag == "\"v2\"")
        #expect(updated.contentType == "image/png")
        #expect(updated.freshnessLifetime == 120)
        #expect(updated.initialAge == 0)
        #expect(updated.isFresh(at: later.addingTimeInterval(119)))
    }

    @Test("metadata survives its binary form; other bytes are refused")
    func encoding() throws {
        let metadata = HTTPCacheMetadata(
            headers: [
                "ETag": "\"é\"", "Cache-Control": "max-age=5",
                "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT",
            ],
            responseTime: received
        )
        let encoded = metadata.encoded()
        #expect(HTTPCacheMetadata(encoded: encoded) == metadata)
        #expect(HTTPCacheMetadata(encoded: encoded.dropLast()) == nil)
        #expect(HTTPCacheMetadata(encoded: encoded + Data([0])) == nil)
        #expect(HTTPCacheMetadata(encoded: Data("not metadata".utf8)) == nil)
        #expect(HTTPCacheMetadata(encoded: Data()) == nil)
    }
}
