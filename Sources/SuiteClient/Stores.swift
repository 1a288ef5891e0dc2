public import Foundation
public import Models

extension SuiteClient {
    /// The signed-in associate's stores (`GET /v1/stores`; an administrator's: every store),
    /// every page, each with its short name when the server has them; kept for offline use.
    public func stores() async throws(SuiteClientError) -> Fetched<[Store]> {
        var all: [Store] = []
        var cursor: String?
        var origin = FetchOrigin.server
        repeat {
            var query = [URLQueryItem(name: "limit", value: "200")]
            if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
            let page = try await get(
                "/v1/stores",
                query: query,
                as: Page<Store>.self,
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
            $0.shortName == lower || $0.name.lowercased() == lower
        }) {
            return match.id
        }
        let known = listed.map { $0.shortName ?? $0.name }.sorted()
        throw SuiteClientError(
            .notFound,
            "no store '\(TextSafety.terminal(text))' among yours (\(known.joined(separator: ", ")))"
        )
    }

    /// The associate's home store as the server says now (`GET /v1/me`), kept in the shared
    /// settings for the next time; offline, the one kept at the last answer (or sign-in).
    /// - Throws: ``SuiteClientError`` other than `offline` (a refused session, say).
    public func currentHomeStoreID() async throws(SuiteClientError) -> UUID? {
        let associate: Associate
        do {
            associate = try await me()
        } catch  where error.code == .offline {
            return homeStoreID
        }
        if associate.homeStoreID != homeStoreID {
            do {
                try settings.set(
                    associate.homeStoreID.map { .string($0.uuidString) },
                    forKey: Self.homeStoreKey
                )
            } catch {
                logger.warning("could not keep the home store", metadata: ["error": "\(error)"])
            }
        }
        return associate.homeStoreID
    }
}
