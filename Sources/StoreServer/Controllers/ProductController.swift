internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models

/// `GET /v1/products`, `GET /v1/products/{gtin}` and `GET /v1/products/{gtin}/image` (signed;
/// the image with ETag, Last-Modified and 304).
struct ProductController {
    let service: CatalogService

    func addRoutes(to routes: RouteGroups) {
        routes.signed.get("/v1/products", use: list)
        routes.signed.get("/v1/products/{gtin}", use: show)
        routes.signed.get("/v1/products/{gtin}/image", use: image)
    }

    @Sendable func list(_ request: Request, context: StoreRequestContext) async throws -> Response {
        let page = try Parse.page(request, cursorValues: 1)
        let text = try Parse.searchText(request)
        return try Reply.json(try await service.products(matching: text, page))
    }

    @Sendable func show(_ request: Request, context: StoreRequestContext) async throws -> Response {
        try Reply.json(try await service.product(gtin: try Parse.gtin(context)))
    }

    @Sendable func image(_ request: Request, context: StoreRequestContext) async throws -> Response
    {
        let image = try await service.image(gtin: try Parse.gtin(context))
        let etag = "\"\(image.etag)\""
        let headers: [(HTTPField.Name, String)] = [
            (.eTag, etag), (.lastModified, HTTPDate.format(image.updatedAt)),
            (.cacheControl, "private, max-age=300"),
        ]
        if let match = request.headers[.ifNoneMatch], EntityTag.matches(match, etag) {
            return Reply.bytes(Data(), status: .notModified, contentType: nil, headers: headers)
        }
        return Reply.bytes(image.png, contentType: "image/png", headers: headers)
    }
}
