import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The server's own count of answers, read from its Prometheus `/metrics`
/// (`store_server_responses_total{route=…,status=…}`): what reached the real server.
enum ServerMetrics {
    static let imageRoute = "/v1/products/{gtin}/image"

    /// Answers with `status` on `route` so far.
    static func responses(_ server: StoreServerProcess, route: String, status: Int) async throws
        -> Int
    {
        let run = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-s", "--max-time", "10", "\(server.url)/metrics"]
        )
        try #require(run.status == 0, "curl /metrics: \(run.stderr)")
        var total = 0
        for line in run.stdout.split(separator: "\n")
        where line.hasPrefix("store_server_responses_total{")
            && line.contains("route=\"\(route)\"") && line.contains("status=\"\(status)\"")
        {
            total += Int(Double(line.split(separator: " ").last ?? "0") ?? 0)
        }
        return total
    }

    /// Image answers (200 full, 304 revalidated).
    static func images(_ server: StoreServerProcess, status: Int = 200) async throws -> Int {
        try await responses(server, route: imageRoute, status: status)
    }
}

/// A TCP relay on 127.0.0.1 (port 0) to `port` that holds every chunk from the server for
/// `delay` before passing it on: a slow link made of real sockets, so a long download can be
/// interrupted half-way. A connection's two descriptors are closed when both directions have
/// ended; `stop()` (or deinit) ends every connection and the listener.
///
/// Closing matters beyond tidiness: a test process holding more than about 1,350
/// descriptors can crash in Foundation's `Process.run()` on Linux (it reads
/// `/proc/self/fd` with a 256-byte over-read of each entry: swift-corelibs-foundation
/// #5472), and one `catalog prefetch` through the relay makes 500 connections.
final class SlowRelay: @unchecked Sendable {
    // Safe: `connections`, `nextID` and `stopped` are guarded by `lock`; descriptors are
    // shut down and closed only under it, so none is closed twice or after its number is
    // reused.
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var connections: [Int: Connection] = [:]
    private var nextID = 0
    private var stopped = false

    private struct Connection {
        var client: Int32
        var upstream: Int32
        /// Directions still pumping (2, then 1; closed at 0).
        var pumping = 2
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Connections whose descriptors are still open.
    var openConnections: Int { lock.withLock { connections.count } }

    init(to target: Int, delay: Double) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            let reason = String(cString: strerror(errno))
            throw ServerStartError(message: "relay cannot listen: \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(fd, $0, &length)
            }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        let acceptor = listener
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(acceptor, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    // Shut down by stop(): nothing else uses the listener now.
                    close(acceptor)
                    return
                }
                let upstream = Self.connectTo(target)
                guard upstream >= 0, let id = track(client, upstream) else {
                    close(client)
                    if upstream >= 0 { close(upstream) }
                    continue
                }
                Thread.detachNewThread {
                    Self.pump(from: client, to: upstream, delay: 0)
                    self.ended(id)
                }
                Thread.detachNewThread {
                    Self.pump(from: upstream, to: client, delay: delay)
                    self.ended(id)
                }
            }
        }
    }

    private func track(_ client: Int32, _ upstream: Int32) -> Int? {
        lock.withLock {
            guard !stopped else { return nil }
            nextID += 1
            connections[nextID] = Connection(client: client, upstream: upstream)
            return nextID
        }
    }

    /// One direction of connection `id` ended; the second closes both descriptors.
    private func ended(_ id: Int) {
        lock.withLock {
            guard var connection = connections[id] else { return }
            connection.pumping -= 1
            if connection.pumping > 0 {
                connections[id] = connection
                return
            }
            close(connection.client)
            close(connection.upstream)
            connections[id] = nil
        }
    }

    private static func connectTo(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if connected != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    private static func pump(from source: Int32, to sink: Int32, delay: Double) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = read(source, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            if delay > 0 { usleep(useconds_t(delay * 1_000_000)) }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes {
                    send(sink, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
                }
                if written <= 0 { break }
                offset += written
            }
            if offset < count { break }
        }
        shutdown(sink, Int32(SHUT_WR))
        shutdown(source, Int32(SHUT_RD))
    }

    /// Refuses new connections and ends every open one; their descriptors close as their
    /// pumps see the end (``openConnections`` falls to 0).
    func stop() {
        lock.withLock {
            guard !stopped else { return }
            stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for connection in connections.values {
                shutdown(connection.client, Int32(SHUT_RDWR))
                shutdown(connection.upstream, Int32(SHUT_RDWR))
            }
        }
    }

    deinit { stop() }
}
