import Auth
import Foundation
import Models
import Synchronization
import TestSupport
import Testing

@testable import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real TCP server on 127.0.0.1 (OS-chosen port) that answers each connection it accepts
/// with the next scripted reply: bytes written in pieces with pauses between them, and then
/// either a close or silence until the server is dropped. It records every request it read.
final class ScriptedServer: Sendable {
    struct Reply: Sendable {
        /// Pieces written one after the other, `pause` apart.
        var pieces: [[UInt8]]
        var pause: Duration = .zero
        /// Keep the connection open after the last piece (until the server goes).
        var hold = false

        static func text(_ text: String) -> Reply { Reply(pieces: [Array(text.utf8)]) }
    }

    let port: Int
    private let fd: Int32
    private let replies: Mutex<[Reply]>
    private let received = Mutex<[String]>([])
    private let stopped = Atomic<Bool>(false)
    private let held = Mutex<[Int32]>([])
    private let acceptedCount = Atomic<Int>(0)

    init(_ replies: [Reply]) throws {
        self.replies = Mutex(replies)
        (fd, port) = try PeerListener.listeningSocket(backlog: 16)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    deinit {
        stopped.store(true, ordering: .sequentiallyConsistent)
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        for client in held.withLock({ $0 }) { close(client) }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The requests read so far (head and body as text).
    var requests: [String] { received.withLock { $0 } }

    /// The connections accepted so far, with or without a request.
    var accepted: Int { acceptedCount.load(ordering: .sequentiallyConsistent) }

    private func serve() {
        while !stopped.load(ordering: .sequentiallyConsistent) {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            acceptedCount.add(1, ordering: .sequentiallyConsistent)
            let request = Self.readRequest(client)
            guard !request.isEmpty else {
                // A connection closed without a request (a connect probe).
                close(client)
                continue
            }
            received.withLock { $0.append(request) }
            let reply = replies.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            guard let reply else {
                close(client)
                continue
            }
            for (index, piece) in reply.pieces.enumerated() {
                if index > 0, reply.pause > .zero {
                    Thread.sleep(forTimeInterval: reply.pause.seconds)
                }
                _ = piece.withUnsafeBytes {
                    send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
            }
            if reply.hold {
                held.withLock { $0.append(client) }
            } else {
                close(client)
            }
        }
    }

    /// Reads a request's head and its `Content-Length` body.
    private static func readRequest(_ client: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func text() -> String { String(decoding: bytes, as: UTF8.self) }
        while true {
            if let range = text().range(of: "\r\n\r\n") {
                let head = text()[..<range.lowerBound]
                let length =
                    head.split(separator: "\r\n").first {
                        $0.lowercased().hasPrefix("content-length:")
                    }.flatMap {
                        Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
                    } ?? 0
                if text().utf8.count
                    - text().utf8.distance(from: text().startIndex, to: range.upperBound) >= length
                {
                    return text()
                }
            }
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return text() }
            bytes += buffer[0..<count]
        }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// Sends through a ``SocketTransport`` with the rule given (follow by default).
private func send(
    _ request: URLRequest,
    deadline: Duration = .seconds(10),
    maxBodyBytes: Int = 1 << 20,
    redirect: @escaping HTTPRedirectRule = { _, _, new in .follow(new) }
) async throws(AuthError) -> (Data, HTTPURLResponse) {
    try await SocketTransport().send(
        request,
        deadline: .now + deadline,
        maxBodyBytes: maxBodyBytes,
        redirect: redirect
    )
}

@Suite("Socket transport for a loopback server")
struct SocketTransportTests {
    @Test(
        "A request goes out with its method, target, Host, headers and body; the answer comes back whole"
    )
    func roundTrip() async throws {
        let server = try ScriptedServer([
            .text(
                "HTTP/1.1 201 Created\r\nETag: \"7\"\r\nX-Twice: a\r\nx-twice: b\r\nContent-Length: 5\r\n\r\nhello"
            )
        ])
        var request = URLRequest(url: URL(string: "\(server.url)/v1/items?q=a%2Bb&x=1")!)
        request.httpMethod = "POST"
        request.httpBody = Data("{\"a\":1}".utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        let (data, response) = try await send(request)
        #expect(response.statusCode == 201)
        #expect(String(decoding: data, as: UTF8.self) == "hello")
        #expect(response.value(forHTTPHeaderField: "etag") == "\"7\"")
        #expect(response.value(forHTTPHeaderField: "X-Twice") == "a, b")
        let sent = try #require(server.requests.first)
        #expect(sent.hasPrefix("POST /v1/items?q=a%2Bb&x=1 HTTP/1.1\r\n"))
        #expect(sent.contains("\r\nHost: 127.0.0.1:\(server.port)\r\n"))
        #expect(sent.contains("\r\nAuthorization: Bearer t\r\n"))
        #expect(sent.contains("\r\nContent-Length: 7\r\n"))
        #expect(sent.contains("\r\nConnection: close\r\n"))
        #expect(sent.hasSuffix("\r\n\r\n{\"a\":1}"))
    }

    @Test(
        "Bodies framed by chunks, by the end of the connection, or after a 100 Continue are read whole",
        arguments: [
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\nTrailer: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\n\r\nabcdefg",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nabcdefg",
        ]
    )
    func framing(reply: String) async throws {
        // Written a few bytes at a time, so every parser state sees a split.
        let bytes = Array(reply.utf8)
        let pieces = stride(from: 0, to: bytes.count, by: 5).map {
            Array(bytes[$0..<min($0 + 5, bytes.count)])
        }
        let server = try ScriptedServer([.init(pieces: pieces, pause: .milliseconds(2))])
        let (data, response) = try await send(
            URLRequest(url: server.url.appendingPathComponent("x"))
        )
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "abcdefg")
    }

    @Test("A 304 has no body even with a Content-Length")
    func notModified() async throws {
        let server = try ScriptedServer([
            .text("HTTP/1.1 304 Not Modified\r\nETag: \"1\"\r\nContent-Length: 20\r\n\r\n")
        ])
        let (data, response) = try await send(URLRequest(url: server.url))
        #expect(response.statusCode == 304)
        #expect(data.isEmpty)
    }

    @Test(
        "A body over the limit is refused, announced or streamed",
        arguments: [
            "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n\(String(repeating: "a", count: 1000))\r\n3e8\r\n\(String(repeating: "b", count: 1000))\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\n\r\n\(String(repeating: "c", count: 2000))",
        ]
    )
    func sizeLimit(reply: String) async throws {
        let server = try ScriptedServer([.text(reply)])
        let error = await #expect(throws: AuthError.self) {
            try await send(URLRequest(url: server.url), maxBodyBytes: 1500)
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("longer than 1500 bytes") == true)
    }

    @Test(
        "Malformed answers are invalid responses naming the problem",
        arguments: [
            ("garbage\r\n\r\n", "malformed status line"),
            ("HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "malformed Content-Length"),
            ("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "unsupported Transfer-Encoding"),
        ]
    )
    func malformed(reply: String, problem: String) async throws {
        let server = try ScriptedServer([.text(reply)])
        let error = await #expect(throws: AuthError.self) {
            try await send(URLRequest(url: server.url))
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains(problem) == true)
    }

    @Test("Headers that never end are refused past 64 KiB")
    func endlessHeaders() async throws {
        let header = Array("X-Long: \(String(repeating: "h", count: 1000))\r\n".utf8)
        let server = try ScriptedServer([
            .init(
                pieces: [Array("HTTP/1.1 200 OK\r\n".utf8)] + Array(repeating: header, count: 80),
                hold: true
            )
        ])
        let error = await #expect(throws: AuthError.self) {
            try await send(URLRequest(url: server.url))
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("headers longer than") == true)
    }

    @Test(
        "An answer cut short, or no answer before the server closes, is a broken connection (retryable)",
        arguments: [
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            "",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        ]
    )
    func cutShort(reply: String) async throws {
        let server = try ScriptedServer([.text(reply)])
        let error = await #expect(throws: AuthError.self) {
            try await send(URLRequest(url: server.url))
        }
        #expect(error?.code == .transport)
    }

    @Test("A closed port is a transport error at once, with the errno as cause")
    func refused() async throws {
        let closed = try ClosedPort()
        defer { closed.release() }
        let port = closed.port
        let started = ContinuousClock.now
        let error = await #expect(throws: AuthError.self) {
            try await send(URLRequest(url: URL(string: "http://127.0.0.1:\(port)/")!))
        }
        #expect(error?.code == .transport)
        #expect((error?.cause as? TransportFailure)?.code == Int(ECONNREFUSED))
        // Not the 10 s deadline (the margin is for a loaded machine: 2.3 s seen under load).
        #expect(ContinuousClock.now - started < .seconds(8))
    }

    @Test(
        "A server that accepts and then stalls, silent or a byte at a time, is cut off at the call's deadline",
        arguments: [false, true]
    )
    func deadline(trickle: Bool) async throws {
        let reply: ScriptedServer.Reply =
            trickle
            ? .init(
                pieces: Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".utf8).map { [$0] }
                    + Array(repeating: [UInt8(97)], count: 100),
                pause: .milliseconds(40),
                hold: true
            )
            : .init(pieces: [], hold: true)
        let server = try ScriptedServer([reply])
        let started = ContinuousClock.now
        let error = await #expect(throws: AuthError.self) {
            try await send(URLRequest(url: server.url), deadline: .milliseconds(400))
        }
        let elapsed = ContinuousClock.now - started
        #expect(error?.code == .deadlineExceeded)
        #expect(elapsed >= .milliseconds(400))
        #expect(elapsed < .seconds(3))
    }

    @Test("Cancelling the calling task ends the call at once with cancelled")
    func cancelled() async throws {
        let server = try ScriptedServer([.init(pieces: [], hold: true)])
        let task = Task { () async -> Result<Int, AuthError> in
            do throws(AuthError) {
                return .success(
                    try await send(URLRequest(url: server.url), deadline: .seconds(30)).1.statusCode
                )
            } catch {
                return .failure(error)
            }
        }
        while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        let started = ContinuousClock.now
        task.cancel()
        let result = await task.value
        #expect(ContinuousClock.now - started < .seconds(2))
        guard case .failure(let error) = result else {
            Issue.record("a cancelled call returned an answer")
            return
        }
        #expect(error.code == .cancelled)
    }

    @Test("A redirect to another origin is refused and nothing is sent there")
    func crossOriginRedirect() async throws {
        let elsewhere = try ScriptedServer([.text("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")])
        let server = try ScriptedServer([
            .text(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: \(elsewhere.url)/stolen\r\nContent-Length: 0\r\n\r\n"
            )
        ])
        var request = URLRequest(url: server.url.appendingPathComponent("v1/me"))
        request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
        let error = await #expect(throws: AuthError.self) {
            try await send(request)  // the rule would follow: the transport itself refuses
        }
        #expect(error?.code == .originMismatch)
        #expect(elsewhere.requests.isEmpty)
    }

    @Test("The redirect rule decides: refuse ends the call, deliver returns the 3xx")
    func redirectRule() async throws {
        let redirect = "HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 4\r\n\r\nmove"
        let server = try ScriptedServer([.text(redirect), .text(redirect)])
        let error = await #expect(throws: AuthError.self) {
            try await send(URLRequest(url: server.url.appendingPathComponent("a"))) { _, _, _ in
                .refuse(AuthError(.originMismatch, "refused by the rule"))
            }
        }
        #expect(error?.message == "refused by the rule")
        let (data, response) = try await send(
            URLRequest(url: server.url.appendingPathComponent("b"))
        ) {
            _,
            _,
            _ in .deliver
        }
        #expect(response.statusCode == 302)
        #expect(String(decoding: data, as: UTF8.self) == "move")
        #expect(server.requests.count == 2)
    }

    @Test("A same-origin 303 is followed as a GET without the body, with the rule's request")
    func followed() async throws {
        let server = try ScriptedServer([
            .text("HTTP/1.1 303 See Other\r\nLocation: /v1/done?x=1\r\nContent-Length: 0\r\n\r\n"),
            .text("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        ])
        var request = URLRequest(url: server.url.appendingPathComponent("v1/start"))
        request.httpMethod = "POST"
        request.httpBody = Data("body".utf8)
        let seen = Mutex<(Int, String?)?>(nil)
        let (data, _) = try await send(request) { original, status, new in
            seen.withLock { $0 = (status, original.url?.path) }
            var next = new
            next.setValue("again", forHTTPHeaderField: "X-Signed")
            return .follow(next)
        }
        #expect(String(decoding: data, as: UTF8.self) == "ok")
        #expect(seen.withLock { $0?.0 } == 303)
        #expect(seen.withLock { $0?.1 } == "/v1/start")
        let second = try #require(server.requests.last)
        #expect(second.hasPrefix("GET /v1/done?x=1 HTTP/1.1\r\n"))
        #expect(second.contains("\r\nX-Signed: again\r\n"))
        #expect(!second.contains("Content-Length"))
        #expect(second.hasSuffix("\r\n\r\n"))
    }

    @Test(
        "Plain http is served (never through a proxy); https goes to URLSession",
        arguments: [
            ("http://127.0.0.1:8080/", true), ("http://localhost/", true),
            ("http://[::1]:9/", true),
            ("http://127.1.2.3/", true), ("https://127.0.0.1/", false),
            ("http://example.com/", true), ("https://example.com/", false),
            ("http://10.0.0.1/", true), ("ftp://127.0.0.1/", false),
        ]
    )
    func serves(url: String, served: Bool) {
        #expect(SocketTransport.serves(URL(string: url)) == served)
    }

    @Test(
        "A client of a plain-http server uses the socket transport, whatever the proxy variables say"
    )
    func chosen() throws {
        let root = try temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        func client(_ server: String, _ environment: [String: String]) throws -> SuiteClient {
            try SuiteClient(
                configuration: SuiteClientConfiguration(
                    appName: "reservations",
                    appVersion: SemanticVersion(1, 0, 0),
                    serverOption: server,
                    root: root,
                    environment: environment
                ),
                logger: quietLogger
            )
        }
        #expect(try client("http://127.0.0.1:8080", [:]).usesSocketTransport)
        #expect(
            try client("http://127.0.0.1:8080", ["http_proxy": "http://proxy:3128"])
                .usesSocketTransport
        )
        #expect(try !client("https://store.example", [:]).usesSocketTransport)
    }
}
