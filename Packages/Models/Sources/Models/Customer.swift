public import Foundation

/// A customer of a store, as reservations and forms refer to them.
///
/// Rules (checked by ``validate()``, the initialiser and decoding): names non-empty, single
/// line, at most 200 characters; `note` at most 2000 characters; `version` in 1…2⁵³; `updatedAt` not
/// before `createdAt`. `email` and `phone` are validated by their types.
public struct Customer: Sendable, Hashable, Codable, Identifiable {
    /// The customer's id.
    public var id: UUID
    /// Optimistic-concurrency version, starting at 1 and bumped by every change.
    public var version: Int
    /// Given (first) name.
    public var givenName: String
    /// Family (last) name.
    public var familyName: String
    /// E-mail address, if known.
    public var email: EmailAddress?
    /// Phone number in E.164, if known.
    public var phone: PhoneNumber?
    /// A free-text note from staff.
    public var note: String?
    /// When the customer record was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date

    /// Makes and validates a customer.
    public init(
        id: UUID = UUID(),
        version: Int = 1,
        givenName: String,
        familyName: String,
        email: EmailAddress? = nil,
        phone: PhoneNumber? = nil,
        note: String? = nil,
        createdAt: Date,
        updatedAt: Date? = nil
    ) throws(ValidationError) {
        self.id = id
        self.version = version
        self.givenName = givenName
        self.familyName = familyName
        self.email = email
        self.phone = phone
        self.note = note
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        try validate()
    }

    /// `givenName familyName`.
    public var displayName: String { "\(givenName) \(familyName)" }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        guard ModelLimits.version.contains(version) else {
            throw ValidationError(
                field: "version",
                code: .outOfRange,
                reason: "\(version) is outside 1…2^53"
            )
        }
        try Check.name(givenName, field: "givenName")
        try Check.name(familyName, field: "familyName")
        if let note { try Check.text(note, field: "note") }
        guard updatedAt >= createdAt else {
            throw ValidationError(
                field: "updatedAt",
                code: .invalidOrder,
                reason: "is before createdAt"
            )
        }
    }

    private enum CodingKeys: String, CodingKey {
        case id, version, givenName, familyName, email, phone, note, createdAt, updatedAt
    }

    /// Decodes and validates a customer; unknown keys are ignored.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeUUID(.id)
        version = try c.decode(Int.self, forKey: .version)
        givenName = try c.decode(String.self, forKey: .givenName)
        familyName = try c.decode(String.self, forKey: .familyName)
        email = try c.decodeIfPresent(EmailAddress.self, forKey: .email)
        phone = try c.decodeIfPresent(PhoneNumber.self, forKey: .phone)
        note = try c.decodeIfPresent(String.self, forKey: .note)
        createdAt = try c.decodeInstant(.createdAt)
        updatedAt = try c.decodeInstant(.updatedAt)
        do { try validate() } catch {
            throw c.wrapped(error, at: CodingKeys(stringValue: error.field))
        }
    }

    /// Encodes the customer; absent optionals are left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeUUID(id, forKey: .id)
        try c.encode(version, forKey: .version)
        try c.encode(givenName, forKey: .givenName)
        try c.encode(familyName, forKey: .familyName)
        try c.encodeIfPresent(email, forKey: .email)
        try c.encodeIfPresent(phone, forKey: .phone)
        try c.encodeIfPresent(note, forKey: .note)
        try c.encodeInstant(createdAt, forKey: .createdAt)
        try c.encodeInstant(updatedAt, forKey: .updatedAt)
    }
}
