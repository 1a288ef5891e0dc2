internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
public import Models
internal import NIOCore

/// An error a route answers with: a problem document and extra headers.
struct APIError: Error, Sendable {
    var problem: APIProblem
    var headers: [(HTTPField.Name, String)] = []

    init(_ problem: APIProblem, headers: [(HTTPField.Name, String)] = []) {
        self.problem = problem
        self.headers = headers
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

    static func payloadTooLarge(limit: Int) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.payloadTooLarge,
                title: "Payload too large",
                status: 413,
                detail: "the request body is larger than \(limit) bytes"
            )
        )
    }

    static func unavailable(_ detail: String) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.unavailable,
                title: "Service unavailable",
                status: 503,
                detail: detail
            ),
            headers: [(.retryAfter, "1")]
        )
    }

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

/// A route's answer before it becomes a `Response`: kept as bytes so an idempotent
/// request's answer can be stored and replayed.
struct Answer: Sendable {
    var status: HTTPResponse.Status = .ok
    var contentType: String?
    var headers: [(HTTPField.Name, String)] = []
    var body: Data = Data()

    var response: Response {
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        for (name, value) in headers { fields.append(HTTPField(name: name, value: value)) }
        if body.isEmpty { return Response(status: status, headers: fields) }
        return Response(
            status: status,
            headers: fields,
            body: .init(byteBuffer: ByteBuffer(data: body))
        )
    }

    init(
        status: HTTPResponse.Status = .ok,
        contentType: String? = nil,
        headers: [(HTTPField.Name, String)] = [],
        body: Data = Data()
    ) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    init(_ error: APIError, requestID: String?) {
        var problem = error.problem
        if problem.status >= 500, problem.instance == nil, let requestID {
            problem.instance = "urn:shopfloor:request:\(requestID)"
        }
        let data =
            (try? JSONEncoder.shopfloor.encode(problem))
            ?? Data(
                #"{"status":500,"title":"Internal error","type":"https://shopfloor.dev/problems/internal"}"#
                    .utf8
            )
        self.init(
            status: HTTPResponse.Status(code: problem.status),
            contentType: APIProblem.mediaType,
            headers: error.headers,
            body: data
        )
    }
}

/// Building answers.
enum Reply {
    static let jsonType = "application/json"

    static func json(
        _ value: some Encodable,
        status: HTTPResponse.Status = .ok,
        headers: [(HTTPField.Name, String)] = []
    ) throws -> Answer {
        Answer(
            status: status,
            contentType: jsonType,
            headers: headers,
            body: try JSONEncoder.shopfloor.encode(value)
        )
    }

    static func bytes(
        _ data: Data,
        status: HTTPResponse.Status = .ok,
        contentType: String,
        headers: [(HTTPField.Name, String)] = []
    ) -> Answer {
        Answer(status: status, contentType: contentType, headers: headers, body: data)
    }

    static func problem(_ error: APIError, requestID: String?) -> Response {
        Answer(error, requestID: requestID).response
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
