internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Logging
internal import NIOCore
internal import Synchronization

/// Honours `Idempotency-Key` on the writes behind it (after ``SignatureMiddleware``): the first
/// request with a key runs and its answer is stored (4xx included); the others with the key get
/// that answer with `Idempotency-Replayed: true`. A key reused with another method, path or body
/// is a 422; a 5xx answer is not kept, so a retry runs again. See ``IdempotencyStore``.
struct IdempotencyMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    let store: IdempotencyStore

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let key = request.headers[.idempotencyKey] else {
            return try await next(request, context)
        }
        try IdempotencyStore.validate(key)
        let subject = try context.caller().subject
        var request = request
        let body = try await request.collect(limit: BodyLimit.json)
        let fingerprint =
            "\(request.method.rawValue) \(request.uri.path) \(RequestSigner.contentDigest(of: body))"
        switch try await store.begin(subject: subject, key: key, fingerprint: fingerprint) {
        case .replay(let stored):
            return Self.replay(stored)
        case .proceed:
            var response: Response
            do {
                response = try await next(request, context)
            } catch let error as APIError {
                response = error.response(requestID: context.requestID)
            } catch {
                try? await store.abandon(subject: subject, key: key)
                throw error
            }
            if response.status.code >= 500 {
                try? await store.abandon(subject: subject, key: key)
                return response
            }
            let bytes = try await Self.collect(response.body)
            try await store.complete(
                subject: subject,
                key: key,
                response: Self.stored(response, body: bytes)
            )
            response.body = ResponseBody(byteBuffer: ByteBuffer(data: bytes))
            return response
        }
    }

    /// What is kept of an answer: status, body, content type, `ETag` and `Location`.
    static func stored(_ response: Response, body: Data) -> IdempotencyStore.StoredResponse {
        var headers: [String: String] = [:]
        if let contentType = response.headers[.contentType] {
            headers["Content-Type"] = contentType
        }
        if let etag = response.headers[.eTag] { headers["ETag"] = etag }
        if let location = response.headers[.location] { headers["Location"] = location }
        return IdempotencyStore.StoredResponse(
            status: Int(response.status.code),
            headers: headers,
            body: body
        )
    }

    /// The stored answer of the request that ran first.
    static func replay(_ stored: IdempotencyStore.StoredResponse) -> Response {
        var headers: [(HTTPField.Name, String)] = [(.idempotencyReplayed, "true")]
        for (name, value) in stored.headers.sorted(by: { $0.key < $1.key })
        where name != "Content-Type" {
            if let field = HTTPField.Name(name) { headers.append((field, value)) }
        }
        return Reply.bytes(
            stored.body,
            status: HTTPResponse.Status(code: stored.status),
            contentType: stored.headers["Content-Type"] ?? Reply.jsonType,
            headers: headers
        )
    }

    /// A response body's bytes (the routes behind this middleware answer from memory).
    static func collect(_ body: ResponseBody) async throws -> Data {
        let collector = BodyCollector()
        try await body.write(collector)
        return collector.bytes.withLock { $0 }
    }
}

/// A response body writer that keeps the bytes.
private final class BodyCollector: ResponseBodyWriter, Sendable {
    let bytes = Mutex(Data())

    func write(_ buffer: ByteBuffer) async throws {
        bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
