public import Auth
public import Foundation
internal import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif
#if canImport(Glibc)
    internal import Glibc
#endif

/// HTTP/1.1 over a plain TCP socket, for a server on this machine (`http://127.0.0.1`,
/// `localhost`, `::1`): what ``SuiteClient`` uses instead of URLSession there, so a
/// short-lived command does not pay for libcurl's start-up, URLSession's threads and its
/// dispatch sources on every run.
///
/// It keeps ``AuthHTTPTransport``'s contract, as URLSession does through Auth's transport:
/// - the call's `deadline` ends it with `deadlineExceeded`, whatever the server does (a
///   server that accepts and never answers, or answers a byte at a time);
/// - cancelling the calling task ends it at once with `cancelled`;
/// - a connection that cannot be opened or breaks is `transport` (Auth retries those);
/// - a body longer than `maxBodyBytes` (by `Content-Length`, or as it arrives) is
///   `invalidResponse`, as are a malformed status line or headers, or headers over 64 KiB;
/// - every redirect is put to the rule before anything goes to its target; a target this
///   transport does not serve (https, another host) is refused with `originMismatch`.
///
/// One connection per request (`Connection: close`), no compression, no proxy (a proxy in
/// the environment makes ``SuiteClient`` use URLSession). Each call runs its socket on a
/// thread of its own, so a blocking `poll` never holds a thread of the concurrency pool.
public struct SocketTransport: AuthHTTPTransport {
    /// Response headers longer than this are refused.
    static let maxHeaderBytes = 64 * 1024
    /// Redirects followed per call at most (URLSession's and curl's limit is higher; the
    /// suite's server never chains them).
    static let maxRedirects = 10

    /// A transport.
    public init() {}

    /// Whether this transport serves `url`: plain http to a loopback host.
    public static func serves(_ url: URL?) -> Bool {
        guard let url, url.scheme?.lowercased() == "http", let host = url.host else {
            return false
        }
        return isLoopback(host)
    }

    /// Scheme, host and port (the port made explicit), for same-origin checks.
    static func origin(_ url: URL?) -> String? {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased()
        else { return nil }
        return "\(scheme)://\(host):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }

    /// `localhost`, `127.0.0.0/8`, `::1` (with or without brackets).
    static func isLoopback(_ name: String) -> Bool {
        var host = name.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            octet.count <= 3 && octet.allSatisfy(\.isASCII)
                && (Int(octet).map { $0 <= 255 } ?? false)
        }
    }

    /// Sends `request`, following redirects the rule allows; any HTTP status is a result.
    public func send(
        _ request: URLRequest,
        deadline: ContinuousClock.Instant,
        maxBodyBytes: Int,
        redirect: @escaping HTTPRedirectRule
    ) async throws(AuthError) -> (Data, HTTPURLResponse) {
        var current = request
        for _ in 0...Self.maxRedirects {
            let path = current.url?.path ?? "?"
            let (data, response) = try await exchange(
                current,
                deadline: deadline,
                maxBodyBytes: maxBodyBytes
            )
            guard [301, 302, 303, 307, 308].contains(response.statusCode),
                let location = response.value(forHTTPHeaderField: "Location"),
                let url = current.url
            else { return (data, response) }
            let next = Self.redirected(
                current,
                status: response.statusCode,
                to: location,
                from: url
            )
            switch redirect(request, response.statusCode, next) {
            case .deliver:
                return (data, response)
            case .refuse(let error):
                throw error
            case .follow(let follow):
                guard Self.serves(follow.url), Self.origin(follow.url) == Self.origin(url) else {
                    throw AuthError(
                        .originMismatch,
                        "the server answered \(response.statusCode) redirecting \(path) to \(follow.url?.absoluteString ?? location); only the same loopback server is followed",
                        status: response.statusCode
                    )
                }
                current = follow
            }
        }
        throw AuthError(
            .invalidResponse,
            "request to \(request.url?.path ?? "?") was redirected more than \(Self.maxRedirects) times"
        )
    }

    /// The request URLSession would send after a redirect: `Location` resolved against the
    /// current URL, the same headers; a 303, or a 301/302 of a `POST`, becomes a `GET`
    /// without a body.
    static func redirected(_ request: URLRequest, status: Int, to location: String, from url: URL)
        -> URLRequest
    {
        var next = request
        next.url = URL(string: location, relativeTo: url)?.absoluteURL
        let method = request.httpMethod ?? "GET"
        if status == 303 && method != "HEAD" || (status == 301 || status == 302) && method == "POST"
        {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.setValue(nil, forHTTPHeaderField: "Content-Type")
            next.setValue(nil, forHTTPHeaderField: "Content-Length")
        }
        return next
    }

    /// One request and its answer on a fresh connection, on a thread of its own.
    private func exchange(
        _ request: URLRequest,
        deadline: ContinuousClock.Instant,
        maxBodyBytes: Int
    ) async throws(AuthError) -> (Data, HTTPURLResponse) {
        let path = request.url?.path ?? "?"
        guard let url = request.url, Self.serves(url), let host = url.host else {
            throw AuthError(
                .invalidRequest,
                "request to \(request.url?.absoluteString ?? "?") is not plain http to this machine"
            )
        }
        let head = Self.head(of: request, url: url, host: host)
        let body = request.httpBody ?? Data()
        let exchange = SocketExchange()
        let port = url.port ?? 80
        let result: Result<(Data, HTTPURLResponse), AuthError> = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (
                    continuation: CheckedContinuation<
                        Result<(Data, HTTPURLResponse), AuthError>, Never
                    >
                ) in
                let thread = Thread {
                    continuation.resume(
                        returning: exchange.run(
                            host: host,
                            port: port,
                            url: url,
                            bytes: Array(head.utf8) + body,
                            noBody: request.httpMethod == "HEAD",
                            deadline: deadline,
                            maxBodyBytes: maxBodyBytes,
                            path: path
                        )
                    )
                }
                thread.stackSize = 512 * 1024
                thread.start()
            }
        } onCancel: {
            exchange.cancel()
        }
        return try result.get()
    }

    /// The request line and headers: the `Host` as URLSession (libcurl) sends it (the port
    /// only when it is not 80), the request's headers, `Content-Length` for a body or a
    /// write, `Connection: close`.
    static func head(of request: URLRequest, url: URL, host: String) -> String {
        let method = request.httpMethod ?? "GET"
        var target = url.path.isEmpty ? "/" : url.path
        if let components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            if let query = components.percentEncodedQuery { target += "?" + query }
        }
        let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(name)"
        if let port = url.port, port != 80 { text += ":\(port)" }
        text += "\r\n"
        var fields = request.allHTTPHeaderFields ?? [:]
        for reserved in ["host", "content-length", "connection", "transfer-encoding"] {
            for key in fields.keys where key.lowercased() == reserved { fields[key] = nil }
        }
        if !fields.keys.contains(where: { $0.lowercased() == "accept" }) {
            text += "Accept: */*\r\n"
        }
        for (field, value) in fields.sorted(by: { $0.key < $1.key }) {
            // Header injection: a value with a line break is not sent as given.
            let clean = value.filter { $0 != "\r" && $0 != "\n" }
            text += "\(field): \(clean)\r\n"
        }
        let body = request.httpBody ?? Data()
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) {
            text += "Content-Length: \(body.count)\r\n"
        }
        text += "Connection: close\r\n\r\n"
        return text
    }
}

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

        // Connect: each address of the host in turn.
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let status = getaddrinfo(bare, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return failure(
                .transport,
                "request to \(path) failed: cannot resolve \(host): \(String(cString: gai_strerror(status)))"
            )
        }
        defer { freeaddrinfo(first) }
        var fd: Int32 = -1
        var lastError: Int32 = ECONNREFUSED
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
                fd = candidate
                break
            }
            guard errno == EINPROGRESS else {
                lastError = errno
                close(candidate)
                continue
            }
            let waited = wait(candidate, for: Int32(POLLOUT), until: deadline)
            guard waited == .ready else {
                close(candidate)
                return stopped(waited)
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(candidate, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 {
                fd = candidate
            } else {
                lastError = error
                close(candidate)
            }
        }
        guard fd >= 0 else { return broken(lastError) }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))

        // Write the request.
        var sent = 0
        while sent < bytes.count {
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

/// Parses an HTTP/1.1 response as its bytes arrive: the status line and headers, then the
/// body by `Content-Length`, by chunks, or up to the end of the connection; interim 1xx
/// answers are skipped.
struct ResponseReader {
    enum Step: Equatable {
        case more
        case failed(String)
        case done(status: Int, fields: [String: String], body: Data)
    }

    private enum Framing: Equatable {
        case length(Int)
        case chunked
        case untilClose
    }

    let maxHeaderBytes: Int
    let maxBodyBytes: Int
    let noBody: Bool
    private var pending: [UInt8] = []
    private var status: Int?
    private var fields: [String: String] = [:]
    private var framing: Framing?
    private var body = Data()
    // Chunked: bytes left in the current chunk (nil: a size line is next); trailers after 0.
    private var chunkLeft: Int?
    private var inTrailers = false
    // Where the search for the end of the headers goes on (bytes before it were searched).
    private var headerScan = 0

    init(maxHeaderBytes: Int, maxBodyBytes: Int, noBody: Bool = false) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.noBody = noBody
    }

    mutating func consume(_ bytes: ArraySlice<UInt8>) -> Step {
        pending.append(contentsOf: bytes)
        return advance()
    }

    /// The connection ended: a body read to the end is complete; anything else was cut
    /// short (`.more`: the caller reports a broken connection, which Auth may retry).
    mutating func finish() -> Step {
        guard let status, framing == .untilClose else { return .more }
        body.append(contentsOf: pending)
        pending.removeAll()
        guard body.count <= maxBodyBytes else { return tooLong() }
        return .done(status: status, fields: fields, body: body)
    }

    private func tooLong() -> Step { .failed("is longer than \(maxBodyBytes) bytes") }

    private mutating func advance() -> Step {
        while true {
            guard let status, let framing else {
                // Headers.
                guard let end = find([13, 10, 13, 10], from: headerScan) else {
                    headerScan = max(0, pending.count - 3)
                    return pending.count > maxHeaderBytes
                        ? .failed("has headers longer than \(maxHeaderBytes) bytes") : .more
                }
                guard end <= maxHeaderBytes else {
                    return .failed("has headers longer than \(maxHeaderBytes) bytes")
                }
                let text = String(decoding: pending[0..<end], as: UTF8.self)
                pending.removeFirst(end + 4)
                headerScan = 0
                if let failed = parseHead(text) { return failed }
                continue
            }
            switch framing {
            case .length(let length):
                guard pending.count >= length else { return .more }
                body.append(contentsOf: pending[0..<length])
                return .done(status: status, fields: fields, body: body)
            case .untilClose:
                guard body.count + pending.count <= maxBodyBytes else { return tooLong() }
                return .more
            case .chunked:
                if inTrailers {
                    guard let end = find([13, 10]) else { return .more }
                    pending.removeFirst(end + 2)
                    if end == 0 { return .done(status: status, fields: fields, body: body) }
                    continue
                }
                if let left = chunkLeft {
                    guard pending.count >= left + 2 else { return .more }
                    guard pending[left] == 13, pending[left + 1] == 10 else {
                        return .failed("has a malformed chunk")
                    }
                    body.append(contentsOf: pending[0..<left])
                    pending.removeFirst(left + 2)
                    chunkLeft = nil
                    continue
                }
                guard let end = find([13, 10]) else {
                    return pending.count > 1024 ? .failed("has a malformed chunk size") : .more
                }
                let line = String(decoding: pending[0..<end], as: UTF8.self)
                pending.removeFirst(end + 2)
                let digits = line.split(separator: ";", maxSplits: 1).first.map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                guard let digits, !digits.isEmpty, digits.count <= 15,
                    let size = Int(digits, radix: 16), size >= 0
                else { return .failed("has a malformed chunk size '\(line.prefix(20))'") }
                guard body.count + size <= maxBodyBytes else { return tooLong() }
                if size == 0 { inTrailers = true } else { chunkLeft = size }
            }
        }
    }

    /// Reads the status line and headers; decides the framing. Nil when all is well.
    private mutating func parseHead(_ text: String) -> Step? {
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3,
            let code = Int(parts[1]), (100...599).contains(code)
        else { return .failed("has a malformed status line '\(statusLine.prefix(40))'") }
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line.first!.isWhitespace
            else { return .failed("has a malformed header line '\(line.prefix(40))'") }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let key = fields.keys.first(where: {
                $0.caseInsensitiveCompare(name) == .orderedSame
            }) {
                fields[key] = fields[key]! + ", " + value
            } else {
                fields[name] = value
            }
        }
        if (100..<200).contains(code) { return nil }  // interim: the real answer follows
        func field(_ name: String) -> String? {
            fields.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
        if noBody || code == 204 || code == 304 {
            framing = .length(0)
        } else if let coding = field("Transfer-Encoding") {
            guard
                coding.lowercased().split(separator: ",").last?.trimmingCharacters(in: .whitespaces)
                    == "chunked"
            else { return .failed("has an unsupported Transfer-Encoding '\(coding.prefix(40))'") }
            framing = .chunked
        } else if let length = field("Content-Length") {
            guard let count = Int(length.trimmingCharacters(in: .whitespaces)), count >= 0 else {
                return .failed("has a malformed Content-Length '\(length.prefix(40))'")
            }
            guard count <= maxBodyBytes else { return tooLong() }
            framing = .length(count)
        } else {
            framing = .untilClose
        }
        status = code
        self.fields = fields
        return nil
    }

    /// The first index of `needle` in the pending bytes at or after `start`.
    private func find(_ needle: [UInt8], from start: Int = 0) -> Int? {
        guard pending.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= pending.count {
            if pending[index] == needle[0], Array(pending[index..<index + needle.count]) == needle {
                return index
            }
            index += 1
        }
        return nil
    }
}
