internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models

/// `GET /v1/stores` and `GET /v1/stores/{id}` (signed).
struct StoreController {
    let service: CatalogService

    func addRoutes(to routes: RouteGroups) {
        routes.signed.get("/v1/stores", use: list)
        routes.signed.get("/v1/stores/{id}", use: show)
    }

    @Sendable func list(_ request: Request, context: StoreRequestContext) async throws -> Response {
        let page = try Parse.page(request, cursorValues: 2)
        return try Reply.json(try await service.stores(page, for: try context.caller()))
    }

    @Sendable func show(_ request: Request, context: StoreRequestContext) async throws -> Response {
        let reference = context.parameters.get("id") ?? ""
        guard UUID(uuidString: reference) != nil || Store.isShortName(reference) else {
            throw APIError.badRequest(
                "path parameter 'id' is neither a store id nor a short name: '\(reference.prefix(40))'"
            )
        }
        return try Reply.json(try await service.store(reference, for: try context.caller()))
    }
}
