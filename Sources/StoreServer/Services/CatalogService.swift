internal import Foundation
internal import Models

/// Stores and products as the signed-in apps read them.
struct CatalogService: Sendable {
    let repository: Repository

    /// A page of the caller's stores (an admin's: every store) by name.
    func stores(_ page: PageRequest, for caller: SignedIn) async throws -> Page<Store> {
        try await repository.stores(page, scope: caller.scope)
    }

    /// The store `reference` (its id or short name).
    /// - Throws: a 404 when there is none among the caller's stores.
    func store(_ reference: String, for caller: SignedIn) async throws -> Store {
        guard let store = try await repository.store(reference: reference, scope: caller.scope)
        else {
            throw APIError.notFound("store \(reference.prefix(64)) does not exist")
        }
        return store
    }

    /// A page of products by GTIN, optionally matching `text` (title, brand, SKU, GTIN).
    func products(matching text: String?, _ page: PageRequest) async throws -> Page<Product> {
        try await repository.products(query: text, page)
    }

    /// The product with `gtin`.
    /// - Throws: a 404 when there is none.
    func product(gtin: GTIN) async throws -> Product {
        guard let product = try await repository.product(gtin: gtin) else {
            throw APIError.notFound("no product has GTIN \(gtin.gtin14)")
        }
        return product
    }

    /// The PNG image of the product with `gtin`.
    /// - Throws: a 404 when the product has none.
    func image(gtin: GTIN) async throws -> Repository.ProductImage {
        guard let image = try await repository.productImage(gtin: gtin) else {
            throw APIError.notFound("product \(gtin.gtin14) has no image")
        }
        return image
    }
}
