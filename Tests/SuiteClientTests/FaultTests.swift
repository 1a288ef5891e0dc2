import Auth
import Foundation
import Models
import Testing

@testable import SuiteClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the client does when the server is away, damaged answers arrive, or local files are
/// damaged: real sockets, scripted answers.
@Suite("Client faults: outages, lost answers, proxies' pages, damaged files")
struct ClientFaultTests {
    func client(_ server: ScriptedServer, root: URL) throws -> SuiteClient {
        try SuiteClient(
            configuration: SuiteClientConfiguration(
                appName: "reservations",
                appVersion: SemanticVersion(1, 2, 3),
                serverOption: server.url.absoluteString,
                deadline: .seconds(20),
                root: root,
                environment: [:]
            ),
            logger: quietLogger
        )
    }

    static func answer(_ status: String, _ headers: [String] = [], body: String = "") -> String {
        "HTTP/1.1 \(status)\r\n" + headers.map { $0 + "\r\n" }.joined()
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    static let unavailable = answer(
        "503 Service Unavailable",
        ["Content-Type: application/problem+json", "Retry-After: 0"],
        body:
            #"{"type":"https://shopfloor.dev/problems/unavailable","title":"Unavailable","status":503}"#
    )

    @Test("The client configuration is asked for again after a 503, within the deadline")
    func configurationRetried() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let response = try minimalConfiguration()
        let body = String(decoding: try ModelsJSON.makeEncoder().encode(response), as: UTF8.self)
        let server = try ScriptedServer([
            .text(Self.unavailable), .text(Self.unavailable),
            .text(Self.answer("200 OK", ["Content-Type: application/json"], body: body)),
        ])
        let client = try client(server, root: root)
        let fetched = try await client.clientConfiguration()
        #expect(!fetched.isFromCache)
        #expect(server.requests.count == 3)
    }

    @Test("A write answered 500 says it may have been applied and how to check")
    func lostWrite() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try ScriptedServer([
            .text(
                Self.answer(
                    "500 Internal Server Error",
                    ["Content-Type: application/problem+json"],
                    body:
                        #"{"type":"https://shopfloor.dev/problems/internal","title":"Internal","status":500}"#
                )
            )
        ])
        let client = try client(server, root: root)
        try client.tokens.save(StoredCredentialsFixture.make(server: server.url.absoluteString))
        let id = UUID()
        await #expect {
            _ = try await client.checkIn(id)
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .server
                && error?.message.contains("may have been applied") == true
                && error?.message.contains("`reservations show \(id.uuidString)`") == true
        }
    }

    @Test(
        "A write the server keeps answering 503 is retried with its key, then reported as unknown"
    )
    func unavailableWrite() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try ScriptedServer(Array(repeating: .text(Self.unavailable), count: 4))
        let client = try client(server, root: root)
        try client.tokens.save(StoredCredentialsFixture.make(server: server.url.absoluteString))
        await #expect {
            _ = try await client.cancel(UUID())
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .offline
                && error?.message.contains("may have been applied") == true
        }
        // Every attempt carried the same Idempotency-Key: the server applies it once at most.
        let keys = server.requests.compactMap { request in
            request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("idempotency-key:") }
        }
        #expect(keys.count == 4)
        #expect(Set(keys).count == 1)
    }

    @Test("A 404 page that is not the server's (a broken proxy) keeps the kept copy")
    func proxyNotFound() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let html = Self.answer(
            "404 Not Found",
            ["Content-Type: text/html"],
            body: "<html><body>Not Found</body></html>"
        )
        let server = try ScriptedServer([.text(html), .text(html)])
        let client = try client(server, root: root)
        try client.tokens.save(StoredCredentialsFixture.make(server: server.url.absoluteString))
        let gtin = try GTIN("4006381333931")
        let product = try Product(
            gtin: gtin,
            sku: "PEN-1",
            title: "Pencil",
            price: Money(minorUnits: 120, currency: CurrencyCode("EUR"))
        )
        client.keep([product])
        let fetched = try await client.product(gtin)
        #expect(fetched.isFromCache)
        #expect(fetched.value.gtin == gtin)
        // Still kept: a second lookup answers from it again.
        #expect(try await client.product(gtin).isFromCache)
    }

    @Test("A damaged token file is a sign-in to make again (exit 77), not a storage failure")
    func damagedTokenFile() async throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try ScriptedServer([])
        let client = try client(server, root: root)
        try Data("{\"accessToken\": tru".utf8).write(to: client.tokens.fileURL)
        await #expect {
            _ = try await client.me()
        } throws: { error in
            let error = error as? SuiteClientError
            return error?.code == .signInRequired && error?.exitCode == 77
                && error?.message.contains("damaged") == true
        }
    }
}

@Suite("Waits in words")
struct WaitWordsTests {
    @Test(
        "A Retry-After is said as people say it",
        arguments: [
            (0, "0 seconds"), (1, "1 second"), (45, "45 seconds"), (60, "1 minute"),
            (897, "15 minutes"), (3_600, "1 hour"), (3_900, "1 hour 5 minutes"),
            (7_260, "2 hours 1 minute"),
        ]
    )
    func words(seconds: Int, words: String) {
        #expect(SuiteClient.describeWait(.seconds(seconds)) == words)
    }
}
