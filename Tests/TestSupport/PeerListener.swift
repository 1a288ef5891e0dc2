import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP listener on a loopback address for tests that play a peer (a hostile server, a
/// proxy's error page, a database that declines TLS): every accepted connection is handed to
/// `serve` on a thread of its own, so a peer that blocks or never stops writing holds no
/// thread of Swift's concurrency pool. Stopped (the socket shut down, accepting ended) by
/// ``stop()`` or when released; connections already handed out end when `serve` returns.
public final class PeerListener: @unchecked Sendable {
    // Safe: `fd` and `port` are set in `init` and only read afterwards; the accepting thread
    // ends when `stop()` shuts the socket down, and closes it.

    /// The port listened on.
    public let port: Int
    /// The address listened on.
    public let host: String
    private let fd: Int32

    /// Why a listener could not be opened.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with `errno`'s words.
        public let description: String

        /// A failure saying `description`.
        public init(description: String) { self.description = description }
    }

    /// Listens on `host`:`port` (0: a free port) and hands each connection to `serve`, which
    /// gets the connected descriptor and closes nothing: the listener closes it after.
    public init(
        host: String = "127.0.0.1",
        port wanted: Int = 0,
        backlog: Int32 = 64,
        serve: @escaping @Sendable (Int32) -> Void
    ) throws {
        let (fd, port) = try Self.listeningSocket(host: host, port: wanted, backlog: backlog)
        self.fd = fd
        self.host = host
        self.port = port
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    // Shut down by stop(): this thread is the descriptor's last user. Closed
                    // anywhere else, its number could be reused by another listener before
                    // this thread's next accept, which would take that listener's connections.
                    close(fd)
                    return
                }
                Thread.detachNewThread {
                    defer { close(client) }
                    serve(client)
                }
            }
        }
    }

    deinit {
        stop()  // the accepting thread closes the socket once its accept fails
    }

    /// A socket listening on `host`:`port` (0: a free port) with `backlog`, and its port:
    /// for a test peer that accepts in its own way (or never).
    public static func listeningSocket(
        host: String = "127.0.0.1",
        port wanted: Int = 0,
        backlog: Int32 = 64
    ) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw Failure(description: "socket: \(String(cString: strerror(errno)))")
        }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = in_port_t(UInt16(wanted).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot listen on \(host):\(wanted): \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = getsockname(fd, $0, &length)
            }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Stops accepting: new connections are refused.
    public func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// `http://host:port`.
    public var url: String { "http://\(host):\(port)" }

    /// Reads from `fd` until `stop` holds for what was read, the peer closes or an error;
    /// returns what was read.
    public static func read(
        _ fd: Int32,
        until stop: ([UInt8]) -> Bool = { _ in false }
    ) -> [UInt8] {
        var seen: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stop(seen) {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            seen += buffer[0..<count]
        }
        return seen
    }

    /// Writes all of `bytes` to `fd`; false when the peer went away.
    @discardableResult
    public static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}
