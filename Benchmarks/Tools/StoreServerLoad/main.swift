// A bounded open-loop load generator for store-server that signs every request (wrk cannot):
// signs in, then sends RATE requests a second for SECONDS over keep-alive HTTP/1.1
// connections (one thread each), each request signed with Auth's RequestSigner and a fresh
// nonce. Latency is measured from each request's scheduled time, so a stalled server cannot
// hide queueing (no coordinated omission). Prints one JSON line: rate, p50, p99, errors, and
// the generator's own CPU as a share of one core (`generator_cpu`).
//
// Usage: StoreServerLoad URL[,URL…] PATH[|PATH…] RATE SECONDS [CONNECTIONS]
//   Each connection sends to one URL (round robin), each request takes the next PATH.
//   Traffic goes to loopback only; the run stops by itself after SECONDS.
import Auth
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 5, let rate = Double(arguments[3]), rate > 0,
    let seconds = Double(arguments[4]),
    seconds > 0, seconds <= 120
else {
    FileHandle.standardError.write(
        Data("usage: StoreServerLoad URL[,URL…] PATH[|PATH…] RATE SECONDS [CONNECTIONS]\n".utf8)
    )
    exit(64)
}
let urls = arguments[1].split(separator: ",").compactMap { URL(string: String($0)) }
let paths = arguments[2].split(separator: "|").map(String.init)
let connections = arguments.count > 5 ? Int(arguments[5]) ?? 32 : 32
for url in urls where url.host != "127.0.0.1" && url.host != "localhost" {
    fail("\(url) is not a loopback address")
}

/// One HTTP/1.1 keep-alive connection on a blocking socket.
final class Connection {
    let fd: Int32
    var buffer = [UInt8](repeating: 0, count: 1 << 20)

    init(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 { fail("cannot connect to port \(port)") }
    }

    deinit { close(fd) }

    /// Sends a request and reads one response; returns its status (0 on a broken connection).
    func exchange(_ request: [UInt8]) -> Int {
        var offset = 0
        while offset < request.count {
            let written = request.withUnsafeBytes {
                write(fd, $0.baseAddress! + offset, request.count - offset)
            }
            if written <= 0 { return 0 }
            offset += written
        }
        var filled = 0
        var headerEnd = -1
        var contentLength = 0
        while true {
            let count = buffer.withUnsafeMutableBytes {
                read(fd, $0.baseAddress! + filled, $0.count - filled)
            }
            if count <= 0 { return 0 }
            filled += count
            if headerEnd < 0, let end = Self.find(buffer, filled) {
                headerEnd = end
                let head = String(decoding: buffer[0..<end], as: UTF8.self).lowercased()
                if let range = head.range(of: "content-length: ") {
                    contentLength = Int(head[range.upperBound...].prefix { $0.isNumber }) ?? 0
                }
            }
            if headerEnd >= 0, filled >= headerEnd + 4 + contentLength {
                let statusText = String(decoding: buffer[9..<12], as: UTF8.self)
                return Int(statusText) ?? 0
            }
            if filled == buffer.count { return 0 }
        }
    }

    static func find(_ buffer: [UInt8], _ count: Int) -> Int? {
        guard count >= 4 else { return nil }
        for index in 0...(count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13
            && buffer[index + 3] == 10
        {
            return index
        }
        return nil
    }
}

// Sign in once (the demo associate); every connection signs with the session's key.
let first = urls[0]
let signIn = Connection(port: first.port!)
let form = "grant_type=password&username=demo&password=shopfloor-demo"
let tokenRequest = Array(
    "POST /v1/auth/token HTTP/1.1\r\nHost: \(first.host!):\(first.port!)\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n\r\n\(form)"
        .utf8
)
guard signIn.exchange(tokenRequest) == 200,
    let headerEnd = Connection.find(signIn.buffer, signIn.buffer.count)
else { fail("sign-in as demo failed") }
let bodyStart = headerEnd + 4
let bodyEnd = signIn.buffer[bodyStart...].firstIndex(of: 0) ?? signIn.buffer.count
struct Tokens: Decodable {
    var access_token: String
    var signing_key_id: String
    var signing_key: String
}
guard
    let tokens = try? JSONDecoder().decode(
        Tokens.self,
        from: Data(signIn.buffer[bodyStart..<bodyEnd])
    ),
    let secret = Data(base64Encoded: tokens.signing_key),
    let key = try? SigningKey(id: tokens.signing_key_id, secret: secret)
else { fail("the token answer could not be read") }
let signer = RequestSigner(key: key)

let total = Int(rate * seconds)
let interval = 1.0 / rate
let results = Mutex<[(latency: Double, status: Int, at: Double)]>([])
let start = Date().timeIntervalSince1970 + 0.2
let threads = max(1, min(connections, total))
let done = DispatchGroup()
for worker in 0..<threads {
    done.enter()
    let thread = Thread {
        let url = urls[worker % urls.count]
        let host = "\(url.host!):\(url.port!)"
        let connection = Connection(port: url.port!)
        var local: [(Double, Int, Double)] = []
        var index = worker
        while index < total {
            let scheduled = start + Double(index) * interval
            let now = Date().timeIntervalSince1970
            if scheduled > now { usleep(useconds_t((scheduled - now) * 1_000_000)) }
            let path = paths[index % paths.count]
            let signed = signer.sign(
                method: "GET",
                targetURI: "http://\(host)\(path)",
                body: [UInt8](),
                created: Int64(Date().timeIntervalSince1970)
            )
            let request = Array(
                "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(tokens.access_token)\r\nSignature-Input: \(signed.signatureInput)\r\nSignature: \(signed.signature)\r\nContent-Digest: \(signed.contentDigest)\r\n\r\n"
                    .utf8
            )
            let status = connection.exchange(request)
            local.append((Date().timeIntervalSince1970 - scheduled, status, scheduled - start))
            index += threads
        }
        results.withLock {
            $0.append(contentsOf: local.map { (latency: $0.0, status: $0.1, at: $0.2) })
        }
        done.leave()
    }
    thread.stackSize = 1 << 20
    thread.start()
}
done.wait()
let all = results.withLock { $0 }
let elapsed = Date().timeIntervalSince1970 - start
let latencies = all.map(\.latency).sorted()
func percentile(_ p: Double) -> Double {
    latencies.isEmpty
        ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] * 1000
}
// STORE_LOAD_TIMELINE=FILE: every request's scheduled time (s from the start), latency (ms)
// and status, in schedule order, to find when a run's slow requests happened.
if let timeline = ProcessInfo.processInfo.environment["STORE_LOAD_TIMELINE"] {
    let lines = all.sorted { $0.at < $1.at }.map {
        String(format: "%.4f %.2f %d", $0.at, $0.latency * 1000, $0.status)
    }
    try? (lines.joined(separator: "\n") + "\n").write(
        toFile: timeline,
        atomically: true,
        encoding: .utf8
    )
}
let errors = all.filter { $0.status != 200 && $0.status != 304 }.count
// The generator's own CPU over the run (user + system, all threads, sign-in included): on a
// machine it shares with the server, what it takes is not available to the server.
var usage = rusage()
getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
let cpuSeconds =
    Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
print(
    String(
        format:
            #"{"target_rps": %.0f, "achieved_rps": %.1f, "requests": %d, "errors": %d, "p50_ms": %.2f, "p99_ms": %.2f, "max_ms": %.2f, "generator_cpu": %.2f}"#,
        rate,
        Double(all.count) / elapsed,
        all.count,
        errors,
        percentile(0.50),
        percentile(0.99),
        (latencies.last ?? 0) * 1000,
        cpuSeconds / max(elapsed, 0.001)
    )
)
