internal import Auth
internal import Foundation
internal import Synchronization

#if canImport(FoundationNetworking)
    internal import FoundationNetworking
#endif
#if canImport(Glibc)
    internal import Glibc
#endif

/// One request on one socket: connect, write, read the answer; a pipe wakes its `poll`
/// when the call is cancelled. Sendable: the descriptors are set once in `init`, and the
/// flag is atomic.
final class SocketExchange: Sendable {
    private let wake: (read: Int32, write: Int32)
    private let cancelled = Atomic<Bool>(false)

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        } else {
            fds = [-1, -1]
        }
        wake = (fds[0], fds[1])
    }

    deinit {
        if wake.read >= 0 { close(wake.read) }
        if wake.write >= 0 { close(wake.write) }
    }

    /// Ends the exchange at once (its `poll` wakes up).
    func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    private enum Wait { case ready, deadline, cancelled }

    /// Waits until `fd` is ready for `events`, the deadline passes or the call is cancelled.
    private func wait(_ fd: Int32, for events: Int32, until deadline: ContinuousClock.Instant)
        -> Wait
    {
        while true {
            if cancelled.load(ordering: .sequentiallyConsistent) { return .cancelled }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .deadline }
            let ms =
                left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            var fds = [
                pollfd(fd: fd, events: Int16(events), revents: 0),
                pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, Int32(clamping: max(1, ms)))
            if ready < 0 {
                if errno == EINTR { continue }
                return .ready  // the next call reports the error
            }
            if fds[1].revents != 0 { return .cancelled }
            if fds[0].revents != 0 { return .ready }
        }
    }

    func run(
        host: String,
        port: Int,
        url: URL,
        bytes: [UInt8],
        noBody: Bool,
        deadline: ContinuousClock.Instant,
        connectTimeout: Duration?,
        onConnect: (@Sendable (ConnectProbe.Outcome) -> Void)?,
        maxBodyBytes: Int,
        path: String
    ) -> Result<(Data, HTTPURLResponse), AuthError> {
        func failure(_ code: AuthError.Code, _ text: String, errno number: Int32? = nil)
            -> Result<(Data, HTTPURLResponse), AuthError>
        {
            .failure(
                AuthError(
                    code,
                    text,
                    cause: number.map {
                        TransportFailure(domain: NSPOSIXErrorDomain, code: Int($0))
                    }
                )
            )
        }
        func stopped(_ wait: Wait) -> Result<(Data, HTTPURLResponse), AuthError> {
            wait == .cancelled
                ? failure(.cancelled, "request to \(path) was cancelled")
                : failure(
                    .deadlineExceeded,
                    "request to \(path) did not finish before its deadline"
                )
        }
        func broken(_ number: Int32) -> Result<(Data, HTTPURLResponse), AuthError> {
            failure(
                .transport,
                "request to \(path) failed: \(String(cString: strerror(number)).lowercased())",
                errno: number
            )
        }

        // Connect: each address of the host in turn, all within the connect timeout. What
        // the attempt found is reported as a connect probe would find it.
        func unreachable(_ reason: String, errno number: Int32? = nil)
            -> Result<(Data, HTTPURLResponse), AuthError>
        {
            onConnect?(.unreachable(reason))
            return failure(.transport, "request to \(path) failed: \(reason)", errno: number)
        }
        let connectEnd = connectTimeout.map { min(deadline, ContinuousClock.now + $0) } ?? deadline
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let status = getaddrinfo(bare, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return unreachable("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var fd: Int32 = -1
        var lastError: Int32 = ECONNREFUSED
        var refusal: String?
        // A loopback listener must prove who runs it before a byte is sent (squatters): one
        // owned by another user is skipped, and the next address tried (`localhost` is
        // 127.0.0.1 and ::1; the server may listen on one, a squatter on the other).
        func trust(_ candidate: Int32) -> Bool {
            switch LoopbackListener.verdict(forConnected: candidate) {
            case .trusted, .notLoopback: return true
            case .untrusted(let uid):
                refusal =
                    "the server at \(host):\(port) is run by \(LoopbackListener.describe(uid)), not by you or root; nothing was sent to it (is the store server stopped and another user's program on its port?)"
            case .unknown:
                refusal =
                    "the listener at \(host):\(port) could not be identified; nothing was sent to it"
            }
            close(candidate)
            return false
        }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry, fd < 0 {
            entry = info.pointee.ai_next
            let candidate = socket(
                info.pointee.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                    | Int32(SOCK_CLOEXEC.rawValue),
                0
            )
            guard candidate >= 0 else {
                lastError = errno
                continue
            }
            if connect(candidate, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                if trust(candidate) { fd = candidate }
                continue
            }
            guard errno == EINPROGRESS else {
                lastError = errno
                close(candidate)
                continue
            }
            let waited = wait(candidate, for: Int32(POLLOUT), until: connectEnd)
            guard waited == .ready else {
                close(candidate)
                if waited == .deadline, connectEnd < deadline, let connectTimeout {
                    return unreachable("no answer within \(ConnectProbe.describe(connectTimeout))")
                }
                return stopped(waited)
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(candidate, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 {
                if trust(candidate) { fd = candidate }
            } else {
                lastError = error
                close(candidate)
            }
        }
        if fd < 0, let refusal {
            onConnect?(.reachable)  // a connection opened; its listener is not trusted
            return failure(.untrustedServer, refusal)
        }
        guard fd >= 0 else {
            return unreachable(String(cString: strerror(lastError)).lowercased(), errno: lastError)
        }
        onConnect?(.reachable)
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))

        // Write the request.
        var sent = 0
        while sent < bytes.count {
            if cancelled.load(ordering: .sequentiallyConsistent) { return stopped(.cancelled) }
            if ContinuousClock.now >= deadline { return stopped(.deadline) }
            let count = bytes.withUnsafeBytes { buffer in
                Glibc.send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                sent += count
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                let waited = wait(fd, for: Int32(POLLOUT), until: deadline)
                guard waited == .ready else { return stopped(waited) }
                continue
            }
            return broken(count < 0 ? errno : EPIPE)
        }

        // Read the answer: headers, then the body by Content-Length, chunks, or to the end.
        var reader = ResponseReader(
            maxHeaderBytes: SocketTransport.maxHeaderBytes,
            maxBodyBytes: maxBodyBytes,
            noBody: noBody
        )
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            // Checked before every read, not only when waiting: a peer that never stops
            // sending (endless interim answers or trailers) must not outlast the deadline.
            if cancelled.load(ordering: .sequentiallyConsistent) { return stopped(.cancelled) }
            if ContinuousClock.now >= deadline { return stopped(.deadline) }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                    let waited = wait(fd, for: Int32(POLLIN), until: deadline)
                    guard waited == .ready else { return stopped(waited) }
                    continue
                }
                return broken(errno)
            }
            let step = count == 0 ? reader.finish() : reader.consume(buffer[0..<count])
            switch step {
            case .more:
                if count == 0 {
                    return failure(
                        .transport,
                        "request to \(path) failed: the server closed the connection before its whole answer",
                        errno: ECONNRESET
                    )
                }
            case .failed(let reason):
                return failure(.invalidResponse, "the response to \(path) \(reason)")
            case .done(let status, let fields, let body):
                guard
                    let response = HTTPURLResponse(
                        url: url,
                        statusCode: status,
                        httpVersion: "HTTP/1.1",
                        headerFields: fields
                    )
                else { return failure(.invalidResponse, "the response to \(path) has no status") }
                return .success((body, response))
            }
        }
    }
}
