internal import Auth
public import Foundation
internal import Models

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension SuiteClient {
    // MARK: Requests

    /// A request for `path` (with `query`) on the server.
    public func request(
        path: String,
        query: [URLQueryItem] = [],
        method: String = "GET",
        body: Data? = nil
    ) -> URLRequest {
        var components = URLComponents(url: server.url, resolvingAgainstBaseURL: false)!
        components.percentEncodedPath = path
        if !query.isEmpty {
            components.queryItems = query
            // `+` is a space in form-style queries; encode it so a phone number survives.
            components.percentEncodedQuery = components.percentEncodedQuery?
                .replacingOccurrences(of: "+", with: "%2B")
        }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue(
            "\(configuration.appName)/\(configuration.appVersion)",
            forHTTPHeaderField: "User-Agent"
        )
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// Sends `request` (signed through Auth unless `signed` is false), racing the connect
    /// probe and the command's deadline. Any HTTP status is a result.
    /// - Throws: ``SuiteClientError``: `offline` (not reachable, or no answer by the
    ///   deadline), `signInRequired`, `cancelled`, `storage`, `server`.
    public func send(_ request: URLRequest, signed: Bool = true) async throws(SuiteClientError)
        -> (Data, HTTPURLResponse)
    {
        let remaining = remainingTime
        let app = configuration.appName
        if signed {
            try checkSession().get()
            let auth = self.auth
            return try await raced { () throws(SuiteClientError) in
                do throws(AuthError) {
                    return try await auth.send(request, deadline: remaining)
                } catch {
                    throw Self.map(error, app: app)
                }
            }
        }
        // Loopback plain http: the socket transport, which follows only the same server.
        let transport: any AuthHTTPTransport = usesSocketTransport ? socketTransport : plain
        let end = self.end
        var attempt = 0
        while true {
            attempt += 1
            let (data, response) = try await raced { () throws(SuiteClientError) in
                do throws(AuthError) {
                    return try await transport.send(
                        request,
                        deadline: end,
                        maxBodyBytes: Self.maxPublicResponseBytes
                    ) { _, _, new in .follow(new) }
                } catch {
                    throw Self.map(error, app: app)
                }
            }
            // A server that cannot answer now (503 while its database is away) is asked
            // again within the deadline, as Auth does for signed requests; only reads.
            guard (request.httpMethod ?? "GET") == "GET",
                [502, 503, 504].contains(response.statusCode), attempt < 4,
                let wait = Self.retryWait(response, attempt: attempt),
                ContinuousClock.now + wait < end
            else { return (data, response) }
            do { try await Task.sleep(for: wait) } catch {
                throw SuiteClientError(
                    .cancelled,
                    "request to \(request.url?.path ?? "?") was cancelled"
                )
            }
        }
    }

    /// The wait before asking again after a 502/503/504: the server's `Retry-After` in
    /// seconds (at most 10 s, else nil: not within reach), or 200 ms doubling per attempt.
    static func retryWait(_ response: HTTPURLResponse, attempt: Int) -> Duration? {
        if let after = response.value(forHTTPHeaderField: "Retry-After") {
            guard let seconds = Int(after.trimmingCharacters(in: .whitespaces)), seconds >= 0,
                seconds <= 10
            else { return nil }
            return .seconds(seconds)
        }
        return .milliseconds(200 << min(attempt - 1, 5))
    }

    /// A signed GET whose answer is kept in the offline cache under `namespace`; offline,
    /// the kept answer is returned with its age. A 404 removes the kept answer.
    public func get<Value: Decodable & Sendable>(
        _ path: String,
        query: [URLQueryItem] = [],
        as type: Value.Type,
        cacheNamespace namespace: String,
        what: String
    ) async throws(SuiteClientError) -> Fetched<Value> {
        try await get(path, query: query, as: type, cacheNamespace: namespace, what: what) {
            _ in nil
        }
    }

    /// ``get(_:query:as:cacheNamespace:what:)``, keeping the answer under
    /// `keptUnder(value)` instead of the request's own key when that gives one (one thing
    /// reachable by several paths is kept once, under the key its offline lookups read).
    func get<Value: Decodable & Sendable>(
        _ path: String,
        query: [URLQueryItem] = [],
        as type: Value.Type,
        cacheNamespace namespace: String,
        what: String,
        keptUnder: (Value) -> ResponseKey?
    ) async throws(SuiteClientError) -> Fetched<Value> {
        let request = request(path: path, query: query)
        let key = cacheKey(namespace: namespace, request: request)
        do {
            let (data, response) = try await send(request)
            // Only the store server's own "not found" (a problem document) ends the kept copy:
            // a 404 page from a broken proxy in the way says nothing about the thing.
            if response.statusCode == 404, Self.isProblem(response, data) { cache.remove(key) }
            try check(response, data, what: what)
            let value = try decode(type, data, what: path)
            let etag = response.value(forHTTPHeaderField: "ETag")
            do { try cache.write(keptUnder(value) ?? key, body: data, etag: etag) } catch {
                logger.warning(
                    "cannot keep \(what) for offline use",
                    metadata: ["error": "\(error)"]
                )
            }
            return Fetched(value: value, origin: .server, etag: etag)
        } catch {
            guard error.code == .offline else { throw error }
            guard let kept = cache.read(key),
                let value = try? ModelsJSON.makeDecoder().decode(type, from: kept.body)
            else {
                throw SuiteClientError(
                    .offline,
                    "offline: \(error.message); no copy of \(what) was kept from an earlier run",
                    cause: error
                )
            }
            return Fetched(
                value: value,
                origin: .cache(fetchedAt: kept.fetchedAt, reason: error.message),
                etag: kept.etag
            )
        }
    }

    /// A write (`POST`, `PATCH`) with a fresh `Idempotency-Key`, so Auth's retries (after a
    /// lost answer, or a 503 while the server's database is away, within the deadline) never
    /// apply it twice; `headers` adds e.g. `If-Match`. Never queued.
    ///
    /// When the outcome is unknown (the request went out but no answer came back before the
    /// deadline, or the server failed with a 5xx after it), the error says that `what` may
    /// have been applied and how to check: `check`, a command for people (e.g.
    /// `reservations show K7QX-3J9M`). When nothing was sent, it says so.
    public func write<Value: Decodable & Sendable>(
        _ method: String,
        _ path: String,
        body: Data? = nil,
        headers: [String: String] = [:],
        as type: Value.Type,
        what: String,
        check hint: String? = nil
    ) async throws(SuiteClientError) -> WriteResponse<Value> {
        var request = request(path: path, method: method, body: body ?? Data())
        if body == nil { request.setValue(nil, forHTTPHeaderField: "Content-Type") }
        request.setValue(UUID().uuidString.lowercased(), forHTTPHeaderField: "Idempotency-Key")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let howToCheck =
            hint.map { "check with `\($0)` before trying again" }
            ?? "look it up before trying again"
        let data: Data
        let response: HTTPURLResponse
        do {
            (data, response) = try await send(request)
        } catch {
            guard error.code == .offline else { throw error }
            let sent = reachability.outcome == .reachable
            throw SuiteClientError(
                .offline,
                sent
                    ? "offline: \(error.message); \(what) may have been applied: \(howToCheck)"
                    : "offline: \(error.message); \(what) was not sent (writes are never queued)",
                cause: error
            )
        }
        do {
            try check(response, data, what: what)
        } catch {
            // A 5xx after the request reached the server: it may have committed the write
            // before failing (or before its answer was lost behind a proxy).
            guard let status = error.status, (500..<600).contains(status) else { throw error }
            var unknown = error
            unknown.message += "; \(what) may have been applied: \(howToCheck)"
            throw unknown
        }
        return WriteResponse(
            value: try decode(type, data, what: path),
            status: response.statusCode,
            etag: response.value(forHTTPHeaderField: "ETag"),
            replayed: response.value(forHTTPHeaderField: "Idempotency-Replayed") == "true"
        )
    }

    /// The cache key of a request: the server's origin, the path and the query.
    public func cacheKey(namespace: String, request: URLRequest) -> ResponseKey {
        let url = request.url
        var name = "\(server.origin) \(url?.path ?? "")"
        if let query = url?.query { name += "?\(query)" }
        return ResponseKey(namespace: namespace, name: name)
    }

    /// Throws the typed error of a non-2xx answer, from its problem document.
    public func check(_ response: HTTPURLResponse, _ data: Data, what: String)
        throws(SuiteClientError)
    {
        let status = response.statusCode
        guard !(200..<300).contains(status) else { return }
        let problem = try? ModelsJSON.makeDecoder().decode(APIProblem.self, from: data)
        let detail =
            problem?.detail ?? problem?.title
            ?? HTTPURLResponse.localizedString(
                forStatusCode: status
            )
        let code: SuiteClientError.Code
        var message = detail
        switch status {
        case 400, 413: code = .invalidInput
        case 401:
            code = .signInRequired
            message = "sign-in required: \(detail) (run `\(configuration.appName) login`)"
        case 403 where problem?.type == ProblemType.featureDisabled: code = .featureDisabled
        case 403:
            code = .notPermitted
            message = "not permitted: \(detail) (your role or stores do not allow it)"
        case 404 where problem != nil: code = .notFound
        case 404:
            // Not the store server's answer (it sends a problem document): a proxy's page.
            code = .offline
            message =
                "the server at \(server) answered 404 with \(Self.contentType(response)), not a store-server answer (a proxy in the way?)"
        case 409, 412: code = .conflict
        case 422 where problem?.type == ProblemType.validationFailed: code = .validationFailed
        case 426: code = .updateRequired
        case 429:
            code = .rateLimited
            if let after = response.value(forHTTPHeaderField: "Retry-After") {
                let trimmed = after.trimmingCharacters(in: .whitespaces)
                message +=
                    Int(trimmed).map { " (try again in \(Self.describeWait(.seconds($0))))" }
                    ?? " (try again after \(TextSafety.terminal(trimmed)))"
            }
        case 502, 503, 504:
            code = .offline
            message = "the server at \(server) is unavailable (\(status)): \(detail)"
        case 500..<600:
            code = .server
            message = "the server failed on \(what) (\(status)): \(detail)"
        default: code = .server
        }
        throw SuiteClientError(
            code,
            message,
            status: status,
            problem: problem,
            fieldErrors: problem?.errors ?? []
        )
    }

    /// Whether an answer is the store server's problem document (RFC 9457).
    static func isProblem(_ response: HTTPURLResponse, _ data: Data) -> Bool {
        (try? ModelsJSON.makeDecoder().decode(APIProblem.self, from: data)) != nil
    }

    /// The answer's media type for messages (`a text/html page`), or `an empty body`.
    static func contentType(_ response: HTTPURLResponse) -> String {
        guard let type = response.value(forHTTPHeaderField: "Content-Type"), !type.isEmpty else {
            return "a body of no declared type"
        }
        let bare = type.split(separator: ";").first.map(String.init) ?? type
        return "a \(TextSafety.terminal(bare.trimmingCharacters(in: .whitespaces))) page"
    }

    /// Decodes a body with the suite's decoder; a body that does not decode is `server`.
    public func decode<Value: Decodable>(_ type: Value.Type, _ data: Data, what: String)
        throws(SuiteClientError) -> Value
    {
        do {
            return try ModelsJSON.makeDecoder().decode(type, from: data)
        } catch {
            throw SuiteClientError(
                .server,
                "the server's answer to \(what) could not be read",
                cause: error as NSError
            )
        }
    }
}
