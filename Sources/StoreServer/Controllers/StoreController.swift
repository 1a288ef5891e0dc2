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
        try Reply.json(try await service.stores(try Parse.page(request, cursorValues: 2)))
    }

    @Sendable func show(_ request: Request, context: StoreRequestContext) async throws -> Response {
        try Reply.json(try await service.store(id: try Parse.id(context)))
    }
}
