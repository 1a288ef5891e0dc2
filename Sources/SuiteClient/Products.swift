public import Foundation
public import Models

/// How a user names a product: a GTIN in any of its forms.
public enum ProductReference {
    /// The GTIN in `text`: 8, 12, 13 or 14 digits (spaces, hyphens and dots between them are
    /// ignored: `4 006381 333931`, `0-12345-67890-5`), or a GS1 element string holding (01):
    /// bracketed `(01)09506000134352(10)ABC`, raw with GS separators, or a GS1 Digital Link
    /// URL (`https://id.gs1.org/01/09506000134352`). The check digit is verified.
    /// - Throws: ``SuiteClientError`` `invalidInput` naming the text and the problem.
    public static func gtin(parsing text: String) throws(SuiteClientError) -> GTIN {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let shown = "'\(trimmed.prefix(80))'"
        guard !trimmed.isEmpty else {
            throw SuiteClientError(.invalidInput, "no GTIN given")
        }
        if trimmed.allSatisfy({ $0.isASCII && ($0.isNumber || " -.".contains($0)) }) {
            let digits = trimmed.filter(\.isNumber)
            do {
                return try GTIN(digits)
            } catch {
                throw SuiteClientError(
                    .invalidInput,
                    "\(shown) is not a GTIN: \(error.reason)",
                    cause: error
                )
            }
        }
        let element: GS1ElementString
        do {
            element = try GS1ElementString(trimmed)
        } catch {
            throw SuiteClientError(
                .invalidInput,
                "\(shown) is neither a GTIN (8, 12, 13 or 14 digits) nor a GS1 code: \(error.field) \(error.reason)",
                cause: error
            )
        }
        guard let gtin = element.gtin else {
            throw SuiteClientError(
                .invalidInput,
                "\(shown) is a GS1 code without a GTIN (01): \(element)"
            )
        }
        return gtin
    }
}

extension ProductReference {
    /// The GTIN a barcode carries, from a reader's symbology name (`scan`'s: `EAN13`,
    /// `EAN8`, `UPCA`, `UPCE`, `ITF`, `DataBar`, `DataMatrix`, `QRCode`, ...), its text and
    /// whether it is a GS1 symbol: the digits of an EAN/UPC (UPC-E as its expanded form), a
    /// 14-digit ITF, a GS1 element string's (01), a GS1 Digital Link URL's /01/, or 8, 12,
    /// 13 or 14 digits alone; nil for anything else or a wrong check digit.
    public static func gtin(inSymbol text: String, format: String, isGS1: Bool) -> GTIN? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch format {
        case "EAN13", "EAN8", "UPCA", "UPCE":
            return try? GTIN(text)
        case "ITF" where text.count == 14:
            return try? GTIN(text)
        default:
            break
        }
        let lower = text.prefix(8).lowercased()
        if isGS1 || format == "DataBar" || text.hasPrefix("(") || lower.hasPrefix("https://")
            || lower.hasPrefix("http://")
        {
            return (try? GS1ElementString(text))?.gtin
        }
        if [8, 12, 13, 14].contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return try? GTIN(text)
        }
        return nil
    }
}

/// A product search (`GET /v1/products`).
public struct ProductQuery: Sendable, Hashable {
    /// Matches the title, brand, SKU or GTIN (case-blind, anywhere in the text).
    public var text: String?
    /// Page size (1…200; the server's default 50 when nil).
    public var limit: Int?
    /// The previous page's `nextCursor`.
    public var cursor: String?

    /// Creates a query.
    public init(text: String? = nil, limit: Int? = nil, cursor: String? = nil) {
        self.text = text
        self.limit = limit
        self.cursor = cursor
    }

    var queryItems: [URLQueryItem] {
        var items: [URLQueryItem] = []
        if let text, !text.isEmpty { items.append(URLQueryItem(name: "query", value: text)) }
        if let limit { items.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let cursor { items.append(URLQueryItem(name: "cursor", value: cursor)) }
        return items
    }

    /// Whether a product matches, as the server decides (for offline answers from the
    /// cache): the text, lowercased, inside the title, brand, SKU or 14-digit GTIN.
    public func matches(_ product: Product) -> Bool {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return true
        }
        let needle = text.lowercased()
        return [product.title, product.brand ?? "", product.sku, product.gtin.gtin14]
            .contains { $0.lowercased().contains(needle) }
    }
}

extension SuiteClient {
    static let productNamespace = "product"
    static let productPageNamespace = "products"

    /// A page of products in GTIN order; every product is kept for offline use. Offline, the
    /// same query's kept page, else the kept products that match it.
    public func products(_ query: ProductQuery) async throws(SuiteClientError)
        -> Fetched<Page<Product>>
    {
        do {
            let page = try await get(
                "/v1/products",
                query: query.queryItems,
                as: Page<Product>.self,
                cacheNamespace: Self.productPageNamespace,
                what: "this product list"
            )
            if !page.isFromCache { keep(page.value.items) }
            return page
        } catch {
            guard error.code == .offline else { throw error }
            let kept = keptProducts().filter { query.matches($0.product) }
            guard !kept.isEmpty else { throw error }
            let times = kept.map(\.fetchedAt)
            let items = kept.map(\.product).sorted { $0.gtin < $1.gtin }
            return Fetched(
                value: Page(items: Array(items.prefix(query.limit ?? 50)), nextCursor: nil),
                origin: .kept(
                    KeptData(count: kept.count, oldest: times.min()!, newest: times.max()!),
                    reason: error.message
                )
            )
        }
    }

    /// One product by GTIN; offline, the copy kept from an earlier lookup or list.
    /// - Throws: ``SuiteClientError``: `notFound` (no such product, exit 3), `offline`
    ///   (nothing kept), `invalidInput` (the server refused the GTIN), `signInRequired`, ...
    public func product(_ gtin: GTIN) async throws(SuiteClientError) -> Fetched<Product> {
        do {
            return try await get(
                productPath(gtin),
                as: Product.self,
                cacheNamespace: Self.productNamespace,
                what: "product \(gtin)"
            )
        } catch {
            guard error.code == .notFound else { throw error }
            throw SuiteClientError(
                .notFound,
                "no product with GTIN \(gtin) on \(server)",
                status: error.status,
                problem: error.problem
            )
        }
    }

    /// The absolute URL of a product's image (its `imageReference`, a path on this server or
    /// a full URL), or nil when the product has none.
    public func imageURL(of product: Product) -> URL? {
        guard let reference = product.imageReference, !reference.isEmpty else { return nil }
        if reference.hasPrefix("/") { return request(path: reference).url }
        guard let url = URL(string: reference), url.scheme == "http" || url.scheme == "https"
        else { return nil }
        return url
    }

    private func productPath(_ gtin: GTIN) -> String { "/v1/products/\(gtin.gtin14)" }

    /// Keeps each product under its own lookup's key, so `product(_:)` answers offline for
    /// anything seen in a list.
    func keep(_ products: [Product]) {
        let encoder = ModelsJSON.makeEncoder()
        for product in products {
            guard let body = try? encoder.encode(product) else { continue }
            try? cache.write(
                cacheKey(
                    namespace: Self.productNamespace,
                    request: request(path: productPath(product.gtin))
                ),
                body: body,
                etag: nil
            )
        }
    }

    /// Every kept product of this server.
    func keptProducts() -> [(product: Product, fetchedAt: Date)] {
        let decoder = ModelsJSON.makeDecoder()
        var newest: [GTIN: (product: Product, fetchedAt: Date)] = [:]
        for entry in cache.entries(namespace: Self.productNamespace)
        where entry.key.name.hasPrefix(server.origin + " ") {
            guard let product = try? decoder.decode(Product.self, from: entry.body) else {
                continue
            }
            if let seen = newest[product.gtin], seen.fetchedAt >= entry.fetchedAt { continue }
            newest[product.gtin] = (product, entry.fetchedAt)
        }
        return Array(newest.values)
    }
}
