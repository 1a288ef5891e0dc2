internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models

/// `GET /v1/config/client?app=&version=[&store=]`: public, with an ETag and 304.
struct ClientConfigurationController {
    let service: ClientConfigurationService

    func addRoutes(to routes: RouteGroups) {
        routes.open.get("/v1/config/client", use: show)
    }

    @Sendable func show(_ request: Request, context: StoreRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        guard let app = query.get("app"), !app.isEmpty else {
            throw APIError.badRequest("query parameter 'app' is missing (the client app's name)")
        }
        guard ConfigService.isValidAppName(app) else {
            throw APIError.badRequest(
                "query parameter 'app' must be 1–64 letters, digits, '.', '_' or '-'"
            )
        }
        guard let versionText = query.get("version"), !versionText.isEmpty else {
            throw APIError.badRequest(
                "query parameter 'version' is missing (the client's semantic version)"
            )
        }
        guard let version = try? SemanticVersion(parsing: versionText) else {
            throw APIError.badRequest(
                "query parameter 'version' is not a semantic version: '\(versionText.prefix(40))'"
            )
        }
        let storeID = try query.get("store").map { text throws(APIError) in
            try Parse.uuid(text, name: "query parameter 'store'")
        }
        let answer = try await service.configuration(app: app, version: version, storeID: storeID)
        let body = try JSONEncoder.shopfloor.encode(answer.response)
        let etag = "\"\(answer.configVersion)-\(EntityTag.shortHash(body))\""
        if let match = request.headers[.ifNoneMatch], EntityTag.matches(match, etag) {
            return Response(
                status: .notModified,
                headers: [.eTag: etag, .cacheControl: "no-cache"]
            )
        }
        return Reply.bytes(
            body,
            contentType: Reply.jsonType,
            headers: [(.eTag, etag), (.cacheControl, "no-cache")]
        )
    }

}
