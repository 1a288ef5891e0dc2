import Foundation
import Testing

@testable import StoreServer

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25, point 3: connections capped per client address and in all (503 with
/// `Retry-After`, never a hang), and a request that trickles in cut off after the body timeout.
@Suite("connection caps and the body timeout")
struct ConnectionLimitTests {
    @Test(
        "a flood from one address is answered 503 with Retry-After past its cap while another client's signed requests are answered",
        arguments: DatabaseKind.allCases
    )
    func perAddress(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(
            kind,
            connections: .init(total: 1_000, perKey: ["address": 8], retryAfter: 2)
        )
        let client = try await server.client()
        let port = server.url.port!
        let flood = try (0..<300).map { _ in try SourcedSocket(port: port, source: "127.0.0.2") }
        let refused = await SourcedSocket.waitUntilClosed(flood, count: 292)
        #expect(refused.count == 292)
        for socket in refused {
            #expect(socket.text.hasPrefix("HTTP/1.1 503"))
            #expect(socket.text.lowercased().contains("retry-after: 2"))
            #expect(socket.text.contains("too many connections at once from this client address"))
        }
        for _ in 0..<20 {
            #expect(try await client.send("GET", "/v1/stores?limit=2").status == 200)
        }
        // The eight admitted are still open; closing them gives their permits back.
        #expect(flood.filter { $0.poll() }.count == 292)
        for socket in flood { socket.close() }
        #expect(
            try await SourcedSocket.health(port: port, source: "127.0.0.2").hasPrefix(
                "HTTP/1.1 200"
            )
        )
        await server.stop()
    }

    @Test(
        "past the total cap every new connection is answered 503 until connections close",
        arguments: DatabaseKind.allCases
    )
    func total(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(
            kind,
            connections: .init(total: 12, perKey: ["address": 8])
        )
        let port = server.url.port!
        let first = try (0..<20).map { _ in try SourcedSocket(port: port, source: "127.0.0.2") }
        #expect(await SourcedSocket.waitUntilClosed(first, count: 12).count == 12)
        let second = try (0..<6).map { _ in try SourcedSocket(port: port, source: "127.0.0.3") }
        let shed = await SourcedSocket.waitUntilClosed(second, count: 2)
        #expect(shed.count == 2)
        for socket in shed {
            #expect(socket.text.hasPrefix("HTTP/1.1 503"))
            #expect(socket.text.contains("the server is at its limit of connections"))
            #expect(socket.text.lowercased().contains("retry-after: 1"))
        }
        let third = try SourcedSocket(port: port, source: "127.0.0.4")
        #expect(await SourcedSocket.waitUntilClosed([third], count: 1).count == 1)
        for socket in first + second { socket.close() }
        #expect(
            try await SourcedSocket.health(port: port, source: "127.0.0.4").hasPrefix(
                "HTTP/1.1 200"
            )
        )
        await server.stop()
    }

    @Test(
        "a request whose body trickles in is cut off after the body timeout, not kept alive by each byte",
        arguments: DatabaseKind.allCases
    )
    func trickledBody(kind: DatabaseKind) async throws {
        let server = try await TestServer.start(
            kind,
            idleTimeout: .seconds(60),
            bodyTimeout: .seconds(1)
        )
        let socket = try SourcedSocket(port: server.url.port!, source: "127.0.0.2")
        #expect(
            socket.send(
                "POST /v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\ng"
            )
        )
        // One byte every 200 ms keeps the idle timeout (60 s) from ever firing; the body
        // timeout (1 s) cuts it off. 150 bytes take 30 s.
        var cut = false
        for _ in 0..<150 where !cut {
            try await Task.sleep(for: .milliseconds(200))
            cut = !socket.send("r") || socket.poll()
        }
        #expect(cut, "the trickled request was still open after 30 s")
        // A request sent at once is answered as usual.
        #expect(
            try await SourcedSocket.health(port: server.url.port!, source: "127.0.0.2").hasPrefix(
                "HTTP/1.1 200"
            )
        )
        await server.stop()
    }
}

/// A TCP connection to 127.0.0.1 from a chosen loopback source address (another client
/// address on this machine), read without blocking.
final class SourcedSocket: @unchecked Sendable {
    private var fd: Int32
    private(set) var received: [UInt8] = []
    private(set) var closed = false
    var text: String { String(decoding: received, as: UTF8.self) }

    init(port: Int, source: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PostgresClusterError("socket() failed: errno \(errno)") }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = local
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        remote.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, connected == 0 else {
            Glibc.close(fd)
            throw PostgresClusterError(
                "connect from \(source) to port \(port) failed: errno \(errno)"
            )
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends `text`; false once the server has closed the connection.
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Reads what has arrived without waiting; true once the server has closed.
    func poll() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while !closed {
            let count = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                received += chunk[0..<count]
            } else if count == 0 || errno == ECONNRESET {
                closed = true
            } else {
                break
            }
        }
        return closed
    }

    /// The sockets of `sockets` the server closed, once `count` of them are (or after 20 s),
    /// and after a further moment in which no more may close.
    static func waitUntilClosed(_ sockets: [SourcedSocket], count: Int) async -> [SourcedSocket] {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, sockets.filter({ $0.poll() }).count < count {
            try? await Task.sleep(for: .milliseconds(20))
        }
        try? await Task.sleep(for: .milliseconds(300))
        return sockets.filter { $0.poll() }
    }

    /// `GET /health` from `source` (retried while it is refused, for up to 10 s): the answer.
    static func health(port: Int, source: String) async throws -> String {
        var answer = ""
        for _ in 0..<50 {
            let socket = try SourcedSocket(port: port, source: source)
            _ = socket.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            _ = await waitUntilClosed([socket], count: 1)
            answer = socket.text
            if !answer.hasPrefix("HTTP/1.1 503") { return answer }
            try await Task.sleep(for: .milliseconds(200))
        }
        return answer
    }
}
