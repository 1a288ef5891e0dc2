public import Foundation
public import Models

/// A store as `GET /v1/stores` lists it: the store, and its short name when the server gives
/// one (`berlin-kurfuerstendamm`, typed instead of the id).
public struct StoreListing: Sendable, Hashable, Codable {
    /// The store.
    public var store: Store
    /// Its short name, when the server has them.
    public var shortName: String?

    private enum CodingKeys: String, CodingKey { case shortName }

    /// Decodes a store and its optional short name from one object.
    public init(from decoder: any Decoder) throws {
        store = try Store(from: decoder)
        shortName = try decoder.container(keyedBy: CodingKeys.self)
            .decodeIfPresent(String.self, forKey: .shortName)
    }

    /// Encodes the store and its short name as one object (the form it is kept in).
    public func encode(to encoder: any Encoder) throws {
        try store.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(shortName, forKey: .shortName)
    }
}

extension SuiteClient {
    /// The signed-in associate's stores (`GET /v1/stores`, an administrator's: every store),
    /// every page; kept for offline use.
    public func stores() async throws(SuiteClientError) -> Fetched<[StoreListing]> {
        var all: [StoreListing] = []
        var cursor: String?
        var origin = FetchOrigin.server
        repeat {
            var query = [URLQueryItem(name: "limit", value: "200")]
            if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
            let page = try await get(
                "/v1/stores",
                query: query,
                as: Page<StoreListing>.self,
                cacheNamespace: "stores",
                what: "your stores"
            )
            if case .server = origin { origin = page.origin }
            all += page.value.items
            cursor = page.value.nextCursor
        } while cursor != nil
        return Fetched(value: all, origin: origin)
    }

    /// The store `text` names: its id, or its short name or exact name among ``stores()``.
    /// - Throws: ``SuiteClientError`` `notFound` (exit 3) listing the stores that exist.
    public func resolveStore(_ text: String) async throws(SuiteClientError) -> UUID {
        if let id = UUID(uuidString: text) { return id }
        let listed = try await stores().value
        let lower = text.lowercased()
        if let match = listed.first(where: {
            $0.shortName == lower || $0.store.name.lowercased() == lower
        }) {
            return match.store.id
        }
        let known = listed.map { $0.shortName ?? $0.store.name }.sorted()
        throw SuiteClientError(
            .notFound,
            "no store '\(TextSafety.terminal(text))' among yours (\(known.joined(separator: ", ")))"
        )
    }
}
