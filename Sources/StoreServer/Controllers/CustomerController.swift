internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models

/// `GET /v1/customers`, `POST /v1/customers` (idempotent) and `GET /v1/customers/{id}`.
struct CustomerController {
    let service: CustomerService

    func addRoutes(to routes: RouteGroups) {
        routes.signed.get("/v1/customers", use: list)
        routes.idempotent.post("/v1/customers", use: create)
        routes.signed.get("/v1/customers/{id}", use: show)
    }

    @Sendable func list(_ request: Request, context: StoreRequestContext) async throws -> Response {
        let page = try Parse.page(request, cursorValues: 3)
        let text = try Parse.searchText(request)
        let store = request.uri.queryParameters.get("store")
        return try Reply.json(
            try await service.customers(
                matching: text,
                store: store,
                page,
                for: try context.caller()
            )
        )
    }

    @Sendable func show(_ request: Request, context: StoreRequestContext) async throws -> Response {
        let id = try Parse.id(context)
        return try Reply.json(try await service.customer(id: id, for: try context.caller()))
    }

    @Sendable func create(_ request: Request, context: StoreRequestContext) async throws -> Response
    {
        var request = request
        let new = try Parse.json(NewCustomer.self, try await request.bodyBytes())
        let customer = try await service.create(new, for: try context.caller())
        return try Reply.json(
            customer,
            status: .created,
            headers: [(.location, "/v1/customers/\(customer.id.uuidString)")]
        )
    }
}
