import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 server on a real socket (127.0.0.1, port 0), one thread per connection,
/// `Connection: close` on every answer. It records every request it receives, can hold an
/// answer until a test releases it, and notices when a client gives up on a held request
/// (the connection closes), which is how the tests see a download being cancelled.
final class TestHTTPServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        /// Header fields by lowercase name.
        var headers: [String: String]
    }

    struct Response: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: Data = Data()
    }

    enum Reply: Sendable {
        case respond(Response)
        /// Holds the answer until `gate` opens; a client that disconnects first is counted
        /// as an abort.
        case hold(Gate, Response)
        /// Announces the whole body but closes the connection after `bytes` of it.
        case cutShort(Response, bytes: Int)
    }

    typealias Handler = @Sendable (Request) -> Reply

    /// What the server has seen so far.
    struct Log: Sendable {
        var requests: [Request] = []
        var aborted: [String] = []
        var served: [String] = []

        func count(_ path: String) -> Int { requests.filter { $0.path == path }.count }
    }

    private struct State {
        var log = Log()
        var watchers:
            [(
                id: Int, condition: @Sendable (Log) -> Bool,
                continuation: CheckedContinuation<Bool, Never>
            )] = []
        var nextWatcher = 0
        var stopped = false
    }

    private let listenFD: Int32
    let port: Int
    private let handler: Mutex<Handler>
    private let state = Mutex(State())

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    init(_ handler: @escaping Handler) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 256) == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listenFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        self.handler = Mutex(handler)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// Replaces the request handler.
    func setHandler(_ handler: @escaping Handler) {
        self.handler.withLock { $0 = handler }
    }

    /// Stops accepting connections: clients then get "connection refused" (offline).
    ///
    /// Only shuts the socket down; the accepting thread closes it when its `accept` fails.
    /// Closed here, its descriptor number could be reused by another test's listener before
    /// the accepting thread's next `accept`, which would then take that server's connections
    /// and answer them with this server's handler (a 404 "no such image" seen by another
    /// test, 2026-11-28).
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
    }

    var log: Log { state.withLock { $0.log } }

    /// Waits until `condition` holds for the log; false after `timeout` seconds.
    func waitUntil(timeout: Double = 20, _ condition: @escaping @Sendable (Log) -> Bool) async
        -> Bool
    {
        let id = state.withLock { state -> Int in
            state.nextWatcher += 1
            return state.nextWatcher
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let now = self.state.withLock { state -> Bool in
                        if condition(state.log) { return true }
                        state.watchers.append((id, condition, continuation))
                        return false
                    }
                    if now { continuation.resume(returning: true) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(timeout))
                let continuation = self.state.withLock {
                    state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.watchers.firstIndex(where: { $0.id == id }) else {
                        return nil
                    }
                    return state.watchers.remove(at: index).continuation
                }
                continuation?.resume(returning: false)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func record(_ change: (inout Log) -> Void) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            change(&state.log)
            var ready: [CheckedContinuation<Bool, Never>] = []
            state.watchers.removeAll { watcher in
                guard watcher.condition(state.log) else { return false }
                ready.append(watcher.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                // Shut down by stop(): this thread is the descriptor's last user.
                close(listenFD)
                return
            }
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        guard let request = readRequest(fd) else { return }
        record { $0.requests.append(request) }
        let reply = handler.withLock { $0 }(request)
        let response: Response
        var bodyLimit: Int?
        switch reply {
        case .respond(let answer):
            response = answer
        case .cutShort(let answer, let bytes):
            response = answer
            bodyLimit = bytes
        case .hold(let gate, let answer):
            guard gate.waitOrDisconnect(fd) else {
                record { $0.aborted.append(request.path) }
                return
            }
            response = answer
        }
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        var headers = response.headers
        headers["Content-Length"] = "\(response.body.count)"
        headers["Connection"] = "close"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        var bytes = Data(head.utf8)
        bytes.append(response.body.prefix(bodyLimit ?? response.body.count))
        let sent = bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let count = send(
                    fd,
                    raw.baseAddress! + offset,
                    raw.count - offset,
                    Int32(MSG_NOSIGNAL)
                )
                if count <= 0 { return false }
                offset += count
            }
            return true
        }
        shutdown(fd, Int32(SHUT_WR))
        if sent && bodyLimit == nil { record { $0.served.append(request.path) } }
    }

    private func readRequest(_ fd: Int32) -> Request? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while buffer.count < 65_536 {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return nil }
            buffer += chunk[0..<count]
            if let end = Self.headEnd(buffer) {
                let text = String(decoding: buffer[0..<end], as: UTF8.self)
                var lines = text.components(separatedBy: "\r\n")
                let parts = lines.removeFirst().split(separator: " ")
                guard parts.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].lowercased()
                    let value = line[line.index(after: colon)...].trimmingCharacters(
                        in: .whitespaces
                    )
                    headers[name] = value
                }
                return Request(method: String(parts[0]), path: String(parts[1]), headers: headers)
            }
        }
        return nil
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13
            && bytes[index + 3] == 10
        {
            return index
        }
        return nil
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 304: "Not Modified"
        case 404: "Not Found"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}

/// A one-shot gate for held answers: a pipe that becomes readable when opened, so a held
/// connection waits on the gate and its socket at once, without polling on a timer.
final class Gate: Sendable {
    private let readFD: Int32
    private let writeFD: Int32

    init() {
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Releases every answer held on this gate.
    func open() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Waits until the gate opens (true) or the client closes its connection (false).
    func waitOrDisconnect(_ socket: Int32) -> Bool {
        while true {
            var fds = [
                pollfd(fd: readFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: socket, events: Int16(POLLIN) | 0x2000 /* POLLRDHUP */, revents: 0),
            ]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return false
            }
            if fds[0].revents != 0 { return true }
            if fds[1].revents != 0 {
                var byte: UInt8 = 0
                let count = recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                if count == 0 || (count < 0 && errno != EAGAIN) { return false }
                // Unexpected bytes from the client (pipelining): keep waiting.
            }
        }
    }
}
