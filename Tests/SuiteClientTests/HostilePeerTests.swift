import Auth
import Foundation
import Synchronization
import Testing

@testable import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hostile HTTP peer on a real socket (127.0.0.1, OS-chosen port): for each connection it
/// reads the request's head, writes `head`, then writes `unit` again and again, `pause`
/// apart, until the client goes away or the peer is dropped.
final class StreamingPeer: Sendable {
    let port: Int
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    private let sentUnits = Atomic<Int>(0)

    init(head: String, unit: String, pause: Duration = .zero) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(bound == 0)
        try #require(listen(fd, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = getsockname(fd, $0, &length)
            }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let headBytes = Array(head.utf8)
        let unitBytes = Array(unit.utf8)
        let thread = Thread { [self] in
            serve(head: headBytes, unit: unitBytes, pause: pause)
        }
        thread.start()
    }

    deinit {
        stopped.store(true, ordering: .sequentiallyConsistent)
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// How many units the peer has written so far.
    var units: Int { sentUnits.load(ordering: .relaxed) }

    private func serve(head: [UInt8], unit: [UInt8], pause: Duration) {
        while !stopped.load(ordering: .sequentiallyConsistent) {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            let thread = Thread { [self] in
                defer { close(client) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                var seen: [UInt8] = []
                while !seen.suffix(4).elementsEqual([13, 10, 13, 10]) {
                    let count = recv(client, &buffer, buffer.count, 0)
                    guard count > 0 else { return }
                    seen += buffer[0..<count]
                }
                guard Self.write(client, head) else { return }
                while !stopped.load(ordering: .sequentiallyConsistent) {
                    guard Self.write(client, unit) else { return }
                    sentUnits.add(1, ordering: .relaxed)
                    if pause > .zero {
                        usleep(UInt32(pause.components.attoseconds / 1_000_000_000_000))
                    }
                }
            }
            thread.start()
        }
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return true }
        return bytes.withUnsafeBytes {
            send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) == $0.count
        }
    }
}

@Suite("The socket transport against a hostile peer")
struct HostilePeerTests {
    private func send(_ url: URL, deadline: Duration, maxBodyBytes: Int = 1 << 20)
        async throws(AuthError) -> (Data, HTTPURLResponse)
    {
        try await SocketTransport().send(
            URLRequest(url: url),
            deadline: .now + deadline,
            maxBodyBytes: maxBodyBytes
        ) { _, _, new in .follow(new) }
    }

    @Test("An endless stream of 100 Continue is refused after a few interim answers")
    func endlessContinue() async throws {
        let peer = try StreamingPeer(head: "", unit: "HTTP/1.1 100 Continue\r\n\r\n")
        let started = ContinuousClock.now
        let error = await #expect(throws: AuthError.self) {
            try await send(peer.url, deadline: .seconds(30))
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("interim (1xx) answers") == true)
        // Refused by the cap, long before the 30 s deadline (the margin is for a loaded machine).
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test("Endless chunked trailers are refused past the header size limit")
    func endlessTrailers() async throws {
        let peer = try StreamingPeer(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n",
            unit: "X-Trailer: more\r\n"
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: AuthError.self) {
            try await send(peer.url, deadline: .seconds(30))
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("trailers longer than") == true)
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test("A body that never ends, sent as fast as the peer can, is cut off at the deadline")
    func endlessBody() async throws {
        let peer = try StreamingPeer(
            head: "HTTP/1.1 200 OK\r\n\r\n",
            unit: String(repeating: "x", count: 16_384)
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: AuthError.self) {
            try await send(peer.url, deadline: .seconds(1), maxBodyBytes: 1 << 40)
        }
        #expect(error?.code == .deadlineExceeded)
        // Before the fix this call never ended; the margin is for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(error?.message.contains("did not finish before its deadline") == true)
    }

    @Test("Headers that trickle in a byte at a time are cut off at the deadline")
    func slowHeaders() async throws {
        let peer = try StreamingPeer(
            head: "HTTP/1.1 200 OK\r\n",
            unit: "X",
            pause: .milliseconds(20)
        )
        let started = ContinuousClock.now
        let error = await #expect(throws: AuthError.self) {
            try await send(peer.url, deadline: .seconds(1))
        }
        #expect(error?.code == .deadlineExceeded)
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test("6,400 header fields are refused at once; 150 of one name merge into one field")
    func manyHeaders() async throws {
        let flood = try ScriptedServer([
            .text(
                "HTTP/1.1 200 OK\r\n"
                    + (0..<6_400).map { "X\($0 % 10): v\r\n" }.joined()
                    + "Content-Length: 0\r\n\r\n"
            )
        ])
        let started = ContinuousClock.now
        let error = await #expect(throws: AuthError.self) {
            try await send(flood.url, deadline: .seconds(30))
        }
        #expect(error?.message.contains("more than 200 header fields") == true)
        #expect(ContinuousClock.now - started < .seconds(20))

        let repeated = try ScriptedServer([
            .text(
                "HTTP/1.1 200 OK\r\n" + String(repeating: "Set-Thing: a\r\n", count: 150)
                    + "Content-Length: 2\r\n\r\nok"
            )
        ])
        let (data, response) = try await send(repeated.url, deadline: .seconds(10))
        #expect(data == Data("ok".utf8))
        let merged = try #require(response.value(forHTTPHeaderField: "Set-Thing"))
        #expect(merged.split(separator: ",").count == 150)
    }
}
