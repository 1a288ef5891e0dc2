internal import Auth
internal import Foundation
internal import Hummingbird
internal import Models

/// Reading path and query parameters, bodies and entity tags; every failure is a 400 or 422
/// problem naming the input.
enum Parse {
    /// A UUID path or query parameter.
    static func uuid(_ text: String, name: String) throws(APIError) -> UUID {
        guard let id = UUID(parsing: text) else {
            throw APIError.badRequest("\(name) is not a UUID: '\(text.prefix(40))'")
        }
        return id
    }

    /// The `{id}` path parameter as a UUID.
    static func id(_ context: StoreRequestContext) throws(APIError) -> UUID {
        try uuid(context.parameters.get("id") ?? "", name: "path parameter 'id'")
    }

    /// The `{gtin}` path parameter in any GTIN form.
    static func gtin(_ context: StoreRequestContext) throws(APIError) -> GTIN {
        do {
            return try GTIN(context.parameters.get("gtin") ?? "")
        } catch {
            throw APIError.badRequest("path parameter 'gtin' is not a GTIN: \(error.reason)")
        }
    }

    /// `limit` and `cursor` of a list.
    static func page(_ request: Request, cursorValues: Int) throws(APIError) -> PageRequest {
        let query = request.uri.queryParameters
        return try PageRequest(
            limit: query.get("limit"),
            cursor: query.get("cursor"),
            cursorValues: cursorValues
        )
    }

    /// A search text (`query`), trimmed, at most 200 characters.
    static func searchText(_ request: Request) throws(APIError) -> String? {
        guard let text = request.uri.queryParameters.get("query") else { return nil }
        guard text.count <= 200 else {
            throw APIError.badRequest("query parameter 'query' is longer than 200 characters")
        }
        return text.trimmingCharacters(in: .whitespaces)
    }

    /// Decodes a JSON body: 400 when it is not JSON or holds text the database cannot store
    /// (naming the field), 422 naming the field that breaks a rule.
    static func json<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws(APIError) -> T {
        guard !body.isEmpty else {
            throw APIError.badRequest("the request body is empty; send a JSON object")
        }
        if let flaw = StorableText.unstorableField(inJSON: body) {
            throw APIError.badRequest(
                "field '\(flaw.field.isEmpty ? "(the body)" : flaw.field)' \(flaw.problem)"
            )
        }
        do {
            return try JSONDecoder.shopfloor.decode(T.self, from: Data(body))
        } catch {
            throw problem(for: error)
        }
    }

    /// The problem for a decoding failure: the validation error or the field it names.
    private static func problem(for error: any Error) -> APIError {
        if let validation = ValidationError(error) { return APIError.validation(validation) }
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        func field(_ field: String, _ code: String, _ message: String) -> APIError {
            APIError.validation([APIProblem.FieldError(field: field, code: code, message: message)])
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            let name = path(context.codingPath + [key])
            return field(name, "missing", "\(name) is missing")
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            let name = path(context.codingPath)
            return field(name, "invalidFormat", "\(name) has the wrong type")
        case .dataCorrupted(let context)? where !context.codingPath.isEmpty:
            let name = path(context.codingPath)
            return field(name, "invalidFormat", "\(name) is not valid")
        default:
            return APIError.badRequest("the request body is not valid JSON")
        }
    }
}

extension Request {
    /// The body collected by ``SignatureMiddleware`` (at most the route's limit).
    mutating func bodyBytes() async throws(APIError) -> [UInt8] {
        try await collect(limit: BodyLimit.json)
    }
}

extension Parse {
    /// Form fields (`application/x-www-form-urlencoded`), each checked for text the database
    /// cannot store.
    /// - Throws: a 400 naming the field.
    static func formFields(_ body: [UInt8]) throws(APIError) -> [String: String] {
        let fields = FormEncoding.decode(body)
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            if let problem = StorableText.problem(in: name) ?? StorableText.problem(in: value) {
                throw APIError.badRequest(
                    "form field '\(QueryTextMiddleware.printable(name))' \(problem)"
                )
            }
        }
        return fields
    }
}
