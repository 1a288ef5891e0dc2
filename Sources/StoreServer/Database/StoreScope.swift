internal import Foundation
internal import Models
internal import SQLKit

/// The stores a caller may see: every store (an admin, the server itself) or a set, possibly
/// empty. Every query for stores, reservations and customers takes one (``Repository``), so no
/// route can read or change another store's data by forgetting to check: outside the scope a
/// thing does not exist (404), and its existence is not revealed.
struct StoreScope: Sendable, Equatable, CustomStringConvertible {
    private enum Stores: Equatable {
        case every
        case only(Set<UUID>)
    }

    private let stores: Stores

    /// Every store.
    static let everyStore = StoreScope(stores: .every)

    /// Only `ids` (none when empty).
    static func only(_ ids: some Sequence<UUID>) -> StoreScope {
        StoreScope(stores: .only(Set(ids)))
    }

    /// Whether the scope holds every store.
    var isEveryStore: Bool { stores == .every }

    /// Whether `store` is in the scope.
    func contains(_ store: UUID) -> Bool {
        switch stores {
        case .every: true
        case .only(let ids): ids.contains(store)
        }
    }

    /// This scope narrowed to one store (empty when `store` is outside it).
    func narrowed(to store: UUID) -> StoreScope {
        contains(store) ? .only([store]) : .only([])
    }

    /// The SQL condition that `column` (a store id) is in the scope.
    func condition(_ column: String) -> SQLQueryString {
        switch stores {
        case .every:
            return "1 = 1"
        case .only(let ids) where ids.isEmpty:
            return "1 = 0"
        case .only(let ids):
            let texts = ids.map(\.uuidString).sorted()
            return "\(unsafeRaw: column) IN (\(binds: texts))"
        }
    }

    /// The ids of the stores in the scope, sorted, or nil for every store.
    var storeIDs: [String]? {
        switch stores {
        case .every: return nil
        case .only(let ids): return ids.map(\.uuidString).sorted()
        }
    }

    /// `every store` or the ids.
    var description: String {
        switch stores {
        case .every: "every store"
        case .only(let ids): ids.map(\.uuidString).sorted().joined(separator: ",")
        }
    }
}
