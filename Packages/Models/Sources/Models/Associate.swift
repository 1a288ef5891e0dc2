public import Foundation

/// The signed-in associate (`GET /v1/me`).
///
/// Rules: `username` 1–64 characters of letters, digits, `.`, `_` and `-`; `displayName`
/// non-empty, single line, at most 200 characters. `role` and `storeIDs` say what the associate
/// may see (``Role``); absent on the wire (an older server) they read as an associate of the
/// home store.
public struct Associate: Sendable, Hashable, Codable {
    /// The sign-in name.
    public var username: String
    /// The name shown to people.
    public var displayName: String
    /// The associate's home store, if any.
    public var homeStoreID: UUID?
    /// What the associate may do.
    public var role: Role
    /// The stores the associate works for (the home store among them); an admin sees every
    /// store whatever this holds.
    public var storeIDs: [UUID]

    /// Makes and validates an associate.
    public init(
        username: String,
        displayName: String,
        homeStoreID: UUID? = nil,
        role: Role = .associate,
        storeIDs: [UUID]? = nil
    ) throws(ValidationError) {
        self.username = username
        self.displayName = displayName
        self.homeStoreID = homeStoreID
        self.role = role
        self.storeIDs = storeIDs ?? homeStoreID.map { [$0] } ?? []
        try validate()
    }

    /// Whether `name` is a valid user name (see the type's rules).
    public static func isValidUsername(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                        || "._-".unicodeScalars.contains($0))
            }
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        guard Self.isValidUsername(username) else {
            throw ValidationError(
                field: "username",
                code: .invalidFormat,
                reason: "is not 1–64 letters, digits, '.', '_' or '-'"
            )
        }
        try Check.name(displayName, field: "displayName")
    }

    private enum CodingKeys: String, CodingKey {
        case username, displayName, homeStoreID, role, storeIDs
    }

    /// Decodes and validates an associate.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        username = try c.decode(String.self, forKey: .username)
        displayName = try c.decode(String.self, forKey: .displayName)
        homeStoreID = try c.contains(.homeStoreID) ? c.decodeUUID(.homeStoreID) : nil
        role = try c.decodeIfPresent(Role.self, forKey: .role) ?? .associate
        storeIDs =
            try c.decodeIfPresent([String].self, forKey: .storeIDs).map { texts in
                try texts.map { text in
                    guard let id = UUID(uuidString: text) else {
                        throw DecodingError.dataCorruptedError(
                            forKey: .storeIDs,
                            in: c,
                            debugDescription: "'\(text.prefix(40))' is not a UUID"
                        )
                    }
                    return id
                }
            } ?? homeStoreID.map { [$0] } ?? []
        do { try validate() } catch {
            throw c.wrapped(error, at: CodingKeys(stringValue: error.field))
        }
    }

    /// Encodes the associate; no home store is left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(username, forKey: .username)
        try c.encode(displayName, forKey: .displayName)
        if let homeStoreID { try c.encodeUUID(homeStoreID, forKey: .homeStoreID) }
        try c.encode(role, forKey: .role)
        try c.encode(storeIDs.map(\.uuidString), forKey: .storeIDs)
    }
}

/// What a signed-in associate may see and do.
///
/// | role | sees | may also |
/// |---|---|---|
/// | `associate` | their stores | |
/// | `manager` | their stores | change their stores' configuration (flags, customer form) |
/// | `admin` | every store | users, minimum versions |
public enum Role: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Store staff: their stores' reservations and customers.
    case associate
    /// A store manager: as an associate, plus their stores' configuration.
    case manager
    /// An administrator: every store, users and minimum versions.
    case admin

    /// Whether the role sees every store (not just its own).
    public var seesEveryStore: Bool { self == .admin }

    /// The raw (wire) value.
    public var description: String { rawValue }
}
