public import Auth
public import Foundation
internal import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif
#if canImport(Glibc)
    internal import Glibc
#endif

/// HTTP/1.1 over a plain TCP socket, for every plain-http server (`http://127.0.0.1`,
/// `localhost`, `::1`, a test rig's host): what ``SuiteClient`` uses instead of URLSession
/// there. It never goes through a proxy, whatever the proxy variables say (libcurl would send
/// plain http, password and tokens included, to `http_proxy` in clear; proxies carry only
/// https, as CONNECT tunnels, through URLSession), and a short-lived command does not pay for
/// libcurl's start-up, URLSession's threads and its dispatch sources on every run.
///
/// It keeps ``AuthHTTPTransport``'s contract, as URLSession does through Auth's transport:
/// - the call's `deadline` bounds every byte it reads: a server that accepts and never
///   answers, answers a byte at a time, or never stops sending (interim answers, trailers);
/// - cancelling the calling task ends it at once with `cancelled`;
/// - a connection that cannot be opened (within the connect timeout, when one is given) or
///   breaks is `transport` (Auth retries those);
/// - a body longer than `maxBodyBytes` (by `Content-Length`, or as it arrives) is
///   `invalidResponse`, as are a malformed status line or headers, headers over 64 KiB or
///   over 200 fields, or more than 16 interim answers;
/// - a listener on this machine that belongs to another user is `untrustedServer`, and
///   nothing is sent to it (``LoopbackListener``);
/// - every redirect is put to the rule before anything goes to its target; a target this
///   transport does not serve (https, another origin) is refused with `originMismatch`.
///
/// One connection per request (`Connection: close`), no compression. Each call runs its
/// socket on a thread of its own, so a blocking `poll` never holds a thread of the
/// concurrency pool.
public struct SocketTransport: AuthHTTPTransport {
    /// Response headers longer than this are refused.
    static let maxHeaderBytes = 64 * 1024
    /// Redirects followed per call at most (URLSession's and curl's limit is higher; the
    /// suite's server never chains them).
    static let maxRedirects = 10

    /// How long opening a connection may take (every address of the host together), or nil
    /// for the call's whole deadline.
    let connectTimeout: Duration?
    /// Told what each connection attempt found: opened, or why not (SuiteClient's
    /// ``Reachability``, which then needs no probe connection of its own).
    let onConnect: (@Sendable (ConnectProbe.Outcome) -> Void)?

    /// A transport whose connections may take the call's whole deadline to open.
    public init() {
        connectTimeout = nil
        onConnect = nil
    }

    /// A transport that gives up opening a connection after `connectTimeout` and tells
    /// `onConnect` what each attempt found.
    init(
        connectTimeout: Duration,
        onConnect: @escaping @Sendable (ConnectProbe.Outcome) -> Void
    ) {
        self.connectTimeout = connectTimeout
        self.onConnect = onConnect
    }

    /// Whether this transport serves `url`: plain http (to any host).
    public static func serves(_ url: URL?) -> Bool {
        guard let url, url.scheme?.lowercased() == "http", let host = url.host else {
            return false
        }
        return !host.isEmpty
    }

    /// Scheme, host and port (the port made explicit), for same-origin checks.
    static func origin(_ url: URL?) -> String? {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased()
        else { return nil }
        return "\(scheme)://\(host):\(url.port ?? (scheme == "https" ? 443 : 80))"
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
                        "the server answered \(response.statusCode) redirecting \(path) to \(follow.url?.absoluteString ?? location); only the same server is followed",
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
                "request to \(request.url?.absoluteString ?? "?") is not plain http"
            )
        }
        let head = Self.head(of: request, url: url, host: host)
        let body = request.httpBody ?? Data()
        let exchange = SocketExchange()
        let port = url.port ?? 80
        let (connectTimeout, onConnect) = (self.connectTimeout, self.onConnect)
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
                            connectTimeout: connectTimeout,
                            onConnect: onConnect,
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
