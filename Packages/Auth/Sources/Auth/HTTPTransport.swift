public import Foundation
internal import Synchronization

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// What a transport does with a redirect: follow it with a (re-signed) request, hand the
/// 3xx answer back to the caller, or end the call with an error.
public enum HTTPRedirectDecision: Sendable {
    /// Send this request next (the new target, signed again when it carries credentials).
    case follow(URLRequest)
    /// End the call with the 3xx answer itself.
    case deliver
    /// End the call with this error; nothing is sent to the new target.
    case refuse(AuthError)
}

/// Decides a redirect from the call's original request, the redirect's status and the
/// request the transport would send next (URLSession's rules: the `Location` resolved
/// against the current URL, the original headers; a 301/302 of a `POST` and every 303 become
/// a `GET` without a body).
public typealias HTTPRedirectRule =
    @Sendable (_ original: URLRequest, _ status: Int, _ new: URLRequest) -> HTTPRedirectDecision

/// How ``AuthClient`` sends a request and gets its answer. The default is URLSession
/// (``AuthClient/init(configuration:store:sessionConfiguration:clock:logger:)``); another
/// transport (SuiteClient's socket transport for loopback http) keeps the same contract:
///
/// - Any HTTP status is a result; only a failure to get one is an error.
/// - At `deadline` the call ends with `deadlineExceeded`; when the calling task is cancelled
///   it ends at once with `cancelled`; a connection that fails or cannot be opened is
///   `transport` (retryable by Auth's policy).
/// - A body longer than `maxBodyBytes` ends the call with `invalidResponse`.
/// - Every redirect is put to `redirect` before anything is sent to its target.
public protocol AuthHTTPTransport: Sendable {
    /// Sends one request under the contract above.
    func send(
        _ request: URLRequest,
        deadline: ContinuousClock.Instant,
        maxBodyBytes: Int,
        redirect: @escaping HTTPRedirectRule
    ) async throws(AuthError) -> (Data, HTTPURLResponse)
}

/// The suite's one bridge from URLSession to async Swift: data tasks with an overall
/// deadline, task cancellation, a body limit and a redirect hook per task. Auth's signed
/// client sends through it by default; SuiteClient's unsigned requests and ImageCache's
/// unsigned image downloads use it too. Linux URLSession only enforces idle timeouts, so the
/// deadline is ours: at the deadline the call ends with `deadlineExceeded` and the URL task is
/// cancelled. Cookies and the URL cache are always off (callers send their own conditional
/// requests).
public final class URLSessionHTTPTransport: AuthHTTPTransport {
    /// What to do with a redirect (``HTTPRedirectDecision``).
    public typealias RedirectDecision = HTTPRedirectDecision
    /// Decides a redirect (``HTTPRedirectRule``).
    public typealias RedirectRule = HTTPRedirectRule

    let session: URLSession
    private let delegate: TransportDelegate

    /// A transport on a session with `configuration` (cookies and the URL cache turned off
    /// on it).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let delegate = TransportDelegate()
        self.delegate = delegate
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        self.session = URLSession(
            configuration: configuration,
            delegate: delegate,
            delegateQueue: queue
        )
    }

    deinit { session.invalidateAndCancel() }

    /// Sends one request; HTTP error statuses are results, not errors.
    /// - Parameter maxBodyBytes: a longer response body ends the call with `invalidResponse`
    ///   (the transfer is cancelled as soon as it passes the limit).
    public func send(
        _ request: URLRequest,
        deadline: ContinuousClock.Instant,
        maxBodyBytes: Int = 16 << 20,
        redirect: @escaping RedirectRule
    )
        async throws(AuthError) -> (Data, HTTPURLResponse)
    {
        let path = request.url?.path ?? "?"
        let call = CallState(maxBodyBytes: maxBodyBytes, path: path)
        let result: Result<(Data, HTTPURLResponse), AuthError> = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (
                    continuation: CheckedContinuation<
                        Result<(Data, HTTPURLResponse), AuthError>, Never
                    >
                ) in
                guard call.install(continuation) else { return }  // cancelled before start
                let task = session.dataTask(with: request)
                delegate.register(
                    task.taskIdentifier,
                    TaskRecord(call: call, original: request, redirect: redirect)
                )
                call.setTask(task)
                let timer = Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if Task.isCancelled { return }
                    call.finish(
                        .failure(
                            AuthError(
                                .deadlineExceeded,
                                "request to \(path) did not finish before its deadline"
                            )
                        )
                    )
                }
                call.setTimer(timer)
                task.resume()
            }
        } onCancel: {
            call.finish(.failure(AuthError(.cancelled, "request to \(path) was cancelled")))
        }
        return try result.get()
    }
}

/// One call's single-shot completion: whichever of response, deadline or cancellation
/// comes first resumes the caller; the others are ignored and the URL task is cancelled.
final class CallState: Sendable {
    typealias Outcome = Result<(Data, HTTPURLResponse), AuthError>
    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var pending: Outcome?
        var finished = false
        var task: URLSessionTask?
        var timer: Task<Void, Never>?
        var body = Data()
    }
    // URLSessionTask is thread-safe for cancel(); the Mutex guards every access.
    private let state = Mutex<State>(State())
    private let maxBodyBytes: Int
    private let path: String

    init(maxBodyBytes: Int, path: String) {
        self.maxBodyBytes = maxBodyBytes
        self.path = path
    }

    /// Stores the continuation; resumes at once (returning false) if already finished.
    func install(_ continuation: CheckedContinuation<Outcome, Never>) -> Bool {
        let early: Outcome? = state.withLock { state in
            if state.finished, let pending = state.pending { return pending }
            state.continuation = continuation
            return nil
        }
        if let early {
            continuation.resume(returning: early)
            return false
        }
        return true
    }

    func setTask(_ task: URLSessionTask) {
        let cancelNow = state.withLock { state in
            state.task = task
            return state.finished
        }
        if cancelNow { task.cancel() }
    }

    func setTimer(_ timer: Task<Void, Never>) {
        let cancelNow = state.withLock { state in
            state.timer = timer
            return state.finished
        }
        if cancelNow { timer.cancel() }
    }

    /// Collects body bytes; past the limit the call fails and the transfer is cancelled.
    func append(_ data: Data) {
        let tooLong = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            guard state.body.count + data.count <= maxBodyBytes else { return true }
            state.body.append(data)
            return false
        }
        if tooLong {
            finish(
                .failure(
                    AuthError(
                        .invalidResponse,
                        "the response to \(path) is longer than \(maxBodyBytes) bytes"
                    )
                )
            )
        }
    }

    /// What a TLS failure says about the server's certificate, or nil for any other error:
    /// NSURLErrorDomain's -1200…-1206, or (as FoundationNetworking on Linux reports libcurl's
    /// verification failures) NSURLErrorUnknown with curl's `SSL certificate problem: …` or
    /// `SSL: … certificate …` text, said as curl says it.
    static func trustFailure(_ error: NSError) -> String? {
        guard error.domain == NSURLErrorDomain else { return nil }
        if error.code == NSURLErrorUnknown {
            let text = error.localizedDescription
            guard
                text.hasPrefix("SSL certificate problem") || text.hasPrefix("SSL peer certificate")
                    || (text.hasPrefix("SSL: ") && text.contains("certificate"))
            else { return nil }
            return "its TLS certificate is not trusted (\(text.prefix(200)))"
        }
        return switch error.code {
        case NSURLErrorServerCertificateUntrusted:
            "its TLS certificate is not trusted (self-signed, or signed by an unknown authority)"
        case NSURLErrorServerCertificateHasUnknownRoot:
            "its TLS certificate chains to an unknown root"
        case NSURLErrorServerCertificateHasBadDate: "its TLS certificate has expired"
        case NSURLErrorServerCertificateNotYetValid: "its TLS certificate is not yet valid"
        case NSURLErrorSecureConnectionFailed: "the TLS handshake failed"
        case NSURLErrorClientCertificateRejected, NSURLErrorClientCertificateRequired:
            "it asks for a client certificate"
        default: nil
        }
    }

    func complete(response: URLResponse?, error: (any Error)?, path: String) {
        if let error {
            let nsError = error as NSError
            if let reason = Self.trustFailure(nsError) {
                // Not "offline": the server answered and failed to prove itself; retrying
                // or answering from kept data would hide it.
                finish(
                    .failure(
                        AuthError(
                            .untrustedServer,
                            "the server did not prove itself: \(reason); nothing was sent",
                            cause: TransportFailure(domain: nsError.domain, code: nsError.code)
                        )
                    )
                )
                return
            }
            let message = "request to \(path) failed: \(nsError.localizedDescription)"
            finish(
                .failure(
                    AuthError(
                        .transport,
                        message,
                        cause: TransportFailure(domain: nsError.domain, code: nsError.code)
                    )
                )
            )
            return
        }
        guard let http = response as? HTTPURLResponse else {
            finish(.failure(AuthError(.invalidResponse, "request to \(path) got no HTTP response")))
            return
        }
        let body = state.withLock { $0.body }
        finish(.success((body, http)))
    }

    func finish(_ outcome: Outcome, cancelTask: Bool = true) {
        let (continuation, task, timer):
            (CheckedContinuation<Outcome, Never>?, URLSessionTask?, Task<Void, Never>?) =
                state.withLock { state in
                    guard !state.finished else { return (nil, nil, nil) }
                    state.finished = true
                    state.pending = outcome
                    let continuation = state.continuation
                    state.continuation = nil
                    return (continuation, state.task, state.timer)
                }
        timer?.cancel()
        if case .failure = outcome, cancelTask { task?.cancel() }
        continuation?.resume(returning: outcome)
    }
}

/// The Foundation error behind a transport failure, by domain and code only (its user
/// info can hold the URL, which is not secret, but we keep errors small).
public struct TransportFailure: Error, Sendable, CustomStringConvertible {
    /// The NSError domain.
    public var domain: String
    /// The NSError code (`NSURLErrorTimedOut`, ...), or the `errno` of a socket call.
    public var code: Int

    /// Creates a failure from an error domain (`NSURLErrorDomain`, `NSPOSIXErrorDomain`)
    /// and code.
    public init(domain: String, code: Int) {
        self.domain = domain
        self.code = code
    }
    /// A description without secrets.
    public var description: String { "\(domain) \(code)" }
}

struct TaskRecord: Sendable {
    let call: CallState
    let original: URLRequest
    let redirect: HTTPRedirectRule
}

/// The session delegate: collects bodies, completes calls, and applies redirect rules.
/// Sendable: its only state is a Mutex-protected table.
final class TransportDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let records = Mutex<[Int: TaskRecord]>([:])

    func register(_ id: Int, _ record: TaskRecord) { records.withLock { $0[id] = record } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let record = records.withLock { $0[dataTask.taskIdentifier] }
        record?.call.append(data)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didCompleteWithError error: (any Error)?
    ) {
        let record = records.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        record?.call.complete(
            response: task.response,
            error: error,
            path: record?.original.url?.path ?? "?"
        )
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let record = records.withLock { $0[task.taskIdentifier] }
        guard let record else {
            completionHandler(nil)
            return
        }
        switch record.redirect(record.original, response.statusCode, request) {
        case .follow(let next):
            completionHandler(next)
        case .deliver:
            completionHandler(nil)  // the task completes with the 3xx answer
        case .refuse(let error):
            // Not followed: the task completes with the 3xx (ignored, the call is over).
            // Cancelling it while URLSession waits for this answer would trap in Foundation.
            completionHandler(nil)
            record.call.finish(.failure(error), cancelTask: false)
        }
    }
}

/// Origins per RFC 6454: scheme, host and port (default ports made explicit).
enum Origin {
    static func of(_ url: URL?) -> String? {
        guard let url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host):\(port)"
    }

    static func of(_ text: String) -> String? { of(URL(string: text)) }

    static func same(_ lhs: URL?, _ rhs: URL?) -> Bool {
        guard let left = of(lhs), let right = of(rhs) else { return false }
        return left == right
    }

    /// Whether `url` may carry credentials: https, or http to a loopback host
    /// (`localhost`, `127.0.0.0/8`, `::1`).
    static func isSecure(_ url: URL?) -> Bool {
        guard let url, let scheme = url.scheme?.lowercased() else { return false }
        if scheme == "https" { return true }
        return scheme == "http" && isLoopback(url.host)
    }

    static func isLoopback(_ host: String?) -> Bool {
        guard var host = host?.lowercased() else { return false }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            guard let value = Int(octet), octet.count <= 3, octet.allSatisfy(\.isASCII) else {
                return false
            }
            return (0...255).contains(value)
        }
    }
}
