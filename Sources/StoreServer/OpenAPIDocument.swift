internal import COpenAPIDocument
internal import Foundation

/// The OpenAPI 3.1 description of the API: `openapi.yaml` beside this file, compiled into the
/// binary by `Sources/COpenAPIDocument` (C23 `#embed`), so an installed `store-server` serves
/// it with no resource bundle beside it.
enum OpenAPIDocument {
    /// The document's bytes.
    static let bytes = Data(
        bytes: shopfloor_openapi_document(),
        count: Int(shopfloor_openapi_document_length())
    )
}
