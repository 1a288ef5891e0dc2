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
/// is a 422; a 5xx answer is not kept, so a retry runs again. The request runs as one unit of
/// work (``StoreDatabase/withUnitOfWork(_:)``) that ends with storing its answer, so a write is
/// never committed without its record: a retry can never apply it twice. See
/// ``IdempotencyStore``.
struct IdempotencyMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    let store: IdempotencyStore
    /// Whether the caller may still see the thing at a path (`/v1/reservations/{id}`, …): a
    /// replay of an answer about something now outside the caller's stores is a 404.
    let visible: @Sendable (String, SignedIn) async throws -> Bool

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let key = request.headers[.idempotencyKey] else {
            return try await next(request, context)
        }
        try IdempotencyStore.validate(key)
        let caller = try context.caller()
        let subject = caller.subject
        var request = request
        let body = try await request.collect(limit: BodyLimit.json)
        let fingerprint =
            "\(request.method.rawValue) \(request.uri.path) \(RequestSigner.contentDigest(of: body))"
        switch try await store.begin(subject: subject, key: key, fingerprint: fingerprint) {
        case .replay(let stored):
            let resource = stored.headers["Location"] ?? request.uri.path
            guard try await visible(resource, caller) else {
                throw APIError.notFound("\(resource) does not exist")
            }
            return Self.replay(stored)
        case .proceed(let owner):
            do {
                // The write and its record commit together, or neither does.
                return try await store.database.withUnitOfWork {
                    var response: Response
                    do {
                        response = try await next(request, context)
                    } catch let error as APIError {
                        response = error.response(requestID: context.requestID)
                    }
                    // A 5xx is not kept: whatever the request wrote is rolled back, and a
                    // retry runs again.
                    if response.status.code >= 500 { throw NotKept(response: response) }
                    let bytes = try await Self.collect(response.body)
                    try await store.complete(
                        subject: subject,
                        key: key,
                        owner: owner,
                        response: Self.stored(response, body: bytes)
                    )
                    response.body = ResponseBody(byteBuffer: ByteBuffer(data: bytes))
                    return response
                }
            } catch let notKept as NotKept {
                try? await store.abandon(subject: subject, key: key, owner: owner)
                return notKept.response
            } catch {
                try? await store.abandon(subject: subject, key: key, owner: owner)
                throw error
            }
        }
    }

    /// A 5xx answer: its unit of work is rolled back and the key given up.
    private struct NotKept: Error {
        var response: Response
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
