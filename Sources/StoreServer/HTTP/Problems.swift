internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models
internal import NIOCore

/// A failure the server answers with: an RFC 9457 problem document (`application/problem+json`)
/// and extra headers. Services and controllers throw it; as Hummingbird's `HTTPResponseError`
/// it becomes its own response, with the request id in `instance` for a 5xx.
struct APIError: Error, Sendable, HTTPResponseError, CustomStringConvertible {
    var problem: APIProblem
    var headers: [(HTTPField.Name, String)] = []

    init(_ problem: APIProblem, headers: [(HTTPField.Name, String)] = []) {
        self.problem = problem
        self.headers = headers
    }

    var status: HTTPResponse.Status { HTTPResponse.Status(code: problem.status) }

    var description: String { "\(problem.status) \(problem.type): \(problem.detail ?? "")" }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response(requestID: (context as? StoreRequestContext)?.requestID)
    }

    /// The problem document as a response; a 5xx names `requestID` in `instance`.
    func response(requestID: String?) -> Response {
        var problem = problem
        if problem.status >= 500, problem.instance == nil, let requestID, !requestID.isEmpty {
            problem.instance = "urn:shopfloor:request:\(requestID)"
        }
        let data =
            (try? JSONEncoder.shopfloor.encode(problem))
            ?? Data(
                #"{"status":500,"title":"Internal error","type":"\#(ProblemType.internal)"}"#.utf8
            )
        return Reply.bytes(
            data,
            status: status,
            contentType: APIProblem.mediaType,
            headers: headers
        )
    }

    static func badRequest(_ detail: String) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.badRequest,
                title: "Bad request",
                status: 400,
                detail: detail
            )
        )
    }

    static func notFound(_ detail: String) -> APIError {
        APIError(
            APIProblem(type: ProblemType.notFound, title: "Not found", status: 404, detail: detail)
        )
    }

    static func validation(_ errors: [APIProblem.FieldError], detail: String? = nil) -> APIError {
        let summary =
            detail ?? errors.map { "\($0.field): \($0.message)" }.prefix(5).joined(separator: "; ")
        return APIError(
            APIProblem(
                type: ProblemType.validationFailed,
                title: "Validation failed",
                status: 422,
                detail: summary,
                errors: errors
            )
        )
    }

    static func validation(_ error: ValidationError) -> APIError {
        validation([APIProblem.FieldError(error)])
    }

    /// 422 naming `field` (an unknown store or customer, …).
    static func unknownValue(_ field: String, _ message: String) -> APIError {
        validation([APIProblem.FieldError(field: field, code: "unknownValue", message: message)])
    }

    static func featureDisabled(_ flag: String, store: Store) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.featureDisabled,
                title: "Feature disabled",
                status: 403,
                detail: "\(flag) is off for store \(store.name) (\(store.id.uuidString))",
                flag: flag
            )
        )
    }

    /// 403: the caller's role does not allow `action`.
    static func forbidden(_ action: String, role: Role) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.forbidden,
                title: "Not permitted",
                status: 403,
                detail: "\(action) is not permitted to the \(role) role"
            )
        )
    }

    static func payloadTooLarge(limit: Int) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.payloadTooLarge,
                title: "Payload too large",
                status: 413,
                detail: "the request body is larger than \(limit) bytes"
            ),
            // The rest of the body is not read: the connection ends with this answer.
            headers: [(.connection, "close")]
        )
    }

    static func unavailable(_ detail: String, retryAfter: Int = 1) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.unavailable,
                title: "Service unavailable",
                status: 503,
                detail: detail
            ),
            headers: [(.retryAfter, String(retryAfter))]
        )
    }

    static let `internal` = APIError(
        APIProblem(
            type: ProblemType.internal,
            title: "Internal error",
            status: 500,
            detail: "The server could not answer; the request id is in 'instance'."
        )
    )

    static func auth(_ problem: ProblemDetails, headers: [(HTTPField.Name, String)] = [])
        -> APIError
    {
        APIError(
            APIProblem(
                type: problem.type,
                title: problem.title,
                status: problem.status,
                detail: problem.detail
            ),
            headers: headers
        )
    }
}

/// Building responses from bytes (so the idempotency middleware can store and replay them).
enum Reply {
    static let jsonType = "application/json"

    /// `value` as JSON in the suite's wire form.
    static func json(
        _ value: some Encodable,
        status: HTTPResponse.Status = .ok,
        headers: [(HTTPField.Name, String)] = []
    ) throws -> Response {
        bytes(
            try JSONEncoder.shopfloor.encode(value),
            status: status,
            contentType: jsonType,
            headers: headers
        )
    }

    /// `data` with a content type and headers; no body when `data` is empty.
    static func bytes(
        _ data: Data,
        status: HTTPResponse.Status = .ok,
        contentType: String?,
        headers: [(HTTPField.Name, String)] = []
    ) -> Response {
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        for (name, value) in headers { fields.append(HTTPField(name: name, value: value)) }
        if data.isEmpty { return Response(status: status, headers: fields) }
        return Response(
            status: status,
            headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(data: data))
        )
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-ID")!
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotencyReplayed = HTTPField.Name("Idempotency-Replayed")!
    static let signature = HTTPField.Name("Signature")!
    static let signatureInput = HTTPField.Name("Signature-Input")!
    static let contentDigest = HTTPField.Name("Content-Digest")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
}
