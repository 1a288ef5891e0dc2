import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP connection to 127.0.0.1 for requests no HTTP client sends.
final class RawSocket {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PostgresClusterError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw PostgresClusterError("connect to port \(port) failed")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Data(text.utf8)) }

    func send(_ bytes: Data) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[(bytes.startIndex + offset)...].withUnsafeBytes {
                write(fd, $0.baseAddress, $0.count)
            }
            guard written > 0 else { throw PostgresClusterError("write failed") }
            offset += written
        }
    }

    /// Writes `bytes` without SIGPIPE; false once the connection refuses them (the server
    /// reset or fully closed it).
    func trySend(_ bytes: Data) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[(bytes.startIndex + offset)...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Waits up to `seconds` for bytes from the server, without reading them.
    func waitReadable(within seconds: Double) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, Int32(seconds * 1_000)) == 1
    }

    /// The bytes up to the connection's end, read on a thread of its own, and whether it
    /// ended in a reset (`ECONNRESET`) rather than the server's orderly close.
    func bytesUntilEndOffPool(within seconds: Int = 10) async -> (bytes: Data, reset: Bool) {
        let socket = UncheckedSocket(socket: self)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let (bytes, _) = socket.socket.bytesUntilClosed(within: seconds)
                continuation.resume(returning: (bytes, socket.socket.endedInReset))
            }
        }
    }

    /// Whether the last read ended in `ECONNRESET`.
    private var endedInReset = false

    /// Reads until the server closes the connection or `seconds` pass without it.
    /// On a thread of its own: the blocking read never holds
    /// one of the concurrency pool's two threads, which the in-process server's shutdown
    /// (and every other suite) needs meanwhile.
    func readUntilClosedOffPool(within seconds: Int = 10) async -> (text: String, closed: Bool) {
        let (bytes, closed) = await bytesUntilClosedOffPool(within: seconds)
        return (String(decoding: bytes, as: UTF8.self), closed)
    }

    /// The bytes up to the server's close (or `seconds` without one), read on a thread of
    /// its own.
    func bytesUntilClosedOffPool(within seconds: Int = 10) async -> (bytes: Data, closed: Bool) {
        let socket = UncheckedSocket(socket: self)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: socket.socket.bytesUntilClosed(within: seconds))
            }
        }
    }

    private func bytesUntilClosed(within seconds: Int) -> (bytes: Data, closed: Bool) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count == 0 { return (data, true) }
            if count < 0 {
                if errno == EINTR { continue }
                endedInReset = errno == ECONNRESET
                return (data, errno == ECONNRESET)
            }
            data.append(contentsOf: chunk[0..<count])
        }
    }
}

/// A socket handed to the one thread that reads it while the test awaits.
private struct UncheckedSocket: @unchecked Sendable {
    // Safe: only the reading thread uses the socket until it resumes the test.
    let socket: RawSocket
}
