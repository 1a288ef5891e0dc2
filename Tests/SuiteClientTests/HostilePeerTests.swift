import Auth
import Foundation
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

/// A hostile HTTP peer on a real socket (127.0.0.1, OS-chosen port): for each connection it
/// reads the request's head, writes `head`, then writes `unit` again and again, `pause`
/// apart, until the client goes away or the peer is dropped.
final class StreamingPeer: Sendable {
    private final class State: Sendable {
        let stopped = Atomic<Bool>(false)
        let sentUnits = Atomic<Int>(0)
    }
    private let listener: PeerListener
    private let state = State()

    init(head: String, unit: String, pause: Duration = .zero) throws {
        let headBytes = Array(head.utf8)
        let unitBytes = Array(unit.utf8)
        let state = self.state
        listener = try PeerListener(backlog: 16) { client in
            let request = PeerListener.read(client) {
                $0.suffix(4).elementsEqual([13, 10, 13, 10])
            }
            guard request.suffix(4).elementsEqual([13, 10, 13, 10]),
                PeerListener.write(client, headBytes)
            else { return }
            while !state.stopped.load(ordering: .sequentiallyConsistent) {
                guard PeerListener.write(client, unitBytes) else { return }
                state.sentUnits.add(1, ordering: .relaxed)
                if pause > .zero {
                    usleep(UInt32(pause.components.attoseconds / 1_000_000_000_000))
                }
            }
        }
    }

    deinit { state.stopped.store(true, ordering: .sequentiallyConsistent) }

    var port: Int { listener.port }
    var url: URL { URL(string: listener.url)! }

    /// How many units the peer has written so far.
    var units: Int { state.sentUnits.load(ordering: .relaxed) }
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
