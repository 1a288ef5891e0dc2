internal import Foundation

/// The OpenAPI 3.1 description of the API (`openapi.yaml` beside this file, a resource).
enum OpenAPIDocument {
    /// The document's bytes, read once.
    static let bytes: Data = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
            let data = try? Data(contentsOf: url)
        else {
            return Data(
                "openapi: 3.1.0\ninfo: {title: store-server, version: 0.1.0}\npaths: {}\n".utf8
            )
        }
        return data
    }()
}
