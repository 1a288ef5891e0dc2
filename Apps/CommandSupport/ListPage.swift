/// One page of a list as every app prints it with `--json`: `{"items": [...], "nextCursor":
/// null}` (`nextCursor` is always present; null on the last page).
///
/// Models is to get the suite's shared `Page<T>` with the store-server; until it is on main
/// this is the apps' page type, with the same shape.
public struct ListPage<Item> {
    /// The items of this page.
    public var items: [Item]
    /// Where the next page starts, or nil on the last page.
    public var nextCursor: String?

    /// Creates a page.
    public init(items: [Item], nextCursor: String? = nil) {
        self.items = items
        self.nextCursor = nextCursor
    }

    private enum CodingKeys: String, CodingKey {
        case items, nextCursor
    }
}

extension ListPage: Encodable where Item: Encodable {
    /// Encodes `items` then `nextCursor`, writing `null` for the last page.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}

extension ListPage: Decodable where Item: Decodable {
    /// Decodes a page; a missing `nextCursor` is the last page.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        items = try container.decode([Item].self, forKey: .items)
        nextCursor = try container.decodeIfPresent(String.self, forKey: .nextCursor)
    }
}

extension ListPage: Sendable where Item: Sendable {}
extension ListPage: Equatable where Item: Equatable {}
