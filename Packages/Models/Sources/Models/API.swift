public import Foundation

// The store-server API's wire types (docs/API.md): what the server encodes and the client
// apps decode, so both sides share one definition.

/// One page of a list: `{"items": [...], "nextCursor": "opaque" | null}`.
///
/// `nextCursor` is opaque to clients: send it back as `?cursor=` for the next page; `null`
/// means this was the last page. It is always written, as `null` on the last page.
public struct Page<Item: Sendable>: Sendable {
    /// The items of this page, in the list's order.
    public var items: [Item]
    /// The cursor of the next page, nil on the last page.
    public var nextCursor: String?

    /// A page from its parts.
    public init(items: [Item], nextCursor: String? = nil) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

extension Page: Equatable where Item: Equatable {}
extension Page: Hashable where Item: Hashable {}

extension Page: Codable where Item: Codable {
    private enum CodingKeys: String, CodingKey { case items, nextCursor }

    /// Decodes a page; a missing `nextCursor` is the last page.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        items = try c.decode([Item].self, forKey: .items)
        nextCursor = try c.decodeIfPresent(String.self, forKey: .nextCursor)
    }

    /// Encodes the page, writing `"nextCursor": null` on the last page.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(items, forKey: .items)
        if let nextCursor {
            try c.encode(nextCursor, forKey: .nextCursor)
        } else {
            try c.encodeNil(forKey: .nextCursor)
        }
    }
}

/// A reservation with its customer and store embedded, so a list needs no second request.
///
/// JSON: the ``Reservation``'s keys plus `"customer": Customer` and `"store": Store`.
/// Rules: `customer.id == reservation.customerID` and `store.id == reservation.storeID`.
public struct ReservationDetail: Sendable, Hashable, Codable, Identifiable {
    /// The reservation.
    public var reservation: Reservation
    /// Its customer.
    public var customer: Customer
    /// Its store.
    public var store: Store

    /// The reservation's id.
    public var id: UUID { reservation.id }

    /// Combines the three; throws when the ids do not belong together.
    public init(reservation: Reservation, customer: Customer, store: Store) throws(ValidationError)
    {
        self.reservation = reservation
        self.customer = customer
        self.store = store
        try validate()
    }

    /// Checks that the customer and store are the reservation's.
    public func validate() throws(ValidationError) {
        guard customer.id == reservation.customerID else {
            throw ValidationError(
                field: "customer.id",
                code: .invalidFormat,
                reason: "is not the reservation's customerID \(reservation.customerID.uuidString)"
            )
        }
        guard store.id == reservation.storeID else {
            throw ValidationError(
                field: "store.id",
                code: .invalidFormat,
                reason: "is not the reservation's storeID \(reservation.storeID.uuidString)"
            )
        }
    }

    private enum CodingKeys: String, CodingKey { case customer, store }

    /// Decodes the flat form and validates it.
    public init(from decoder: any Decoder) throws {
        reservation = try Reservation(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        customer = try c.decode(Customer.self, forKey: .customer)
        store = try c.decode(Store.self, forKey: .store)
        do { try validate() } catch { throw c.wrapped(error, at: nil) }
    }

    /// Encodes the reservation's keys and the embedded customer and store.
    public func encode(to encoder: any Encoder) throws {
        try reservation.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(customer, forKey: .customer)
        try c.encode(store, forKey: .store)
    }
}

/// The body of `POST /v1/reservations`.
///
/// Either an existing `customerID` or `customer` form values (validated by the server against
/// the store's customer form), not both. Rules: `endsAt` after `startsAt`; `partySize` 1…50;
/// `topic` non-empty, single line, at most 200 characters; `notes` at most 2000.
public struct NewReservation: Sendable, Hashable, Codable {
    /// The store the reservation is at.
    public var storeID: UUID
    /// The first instant of the slot.
    public var startsAt: Date
    /// The instant the slot ends.
    public var endsAt: Date
    /// How many people come.
    public var partySize: Int
    /// What it is about.
    public var topic: String
    /// Free-text notes.
    public var notes: String?
    /// An existing customer.
    public var customerID: UUID?
    /// A new customer's form values by field name.
    public var customer: [String: String]?

    /// Makes and validates a request.
    public init(
        storeID: UUID,
        startsAt: Date,
        endsAt: Date,
        partySize: Int = 1,
        topic: String,
        notes: String? = nil,
        customerID: UUID? = nil,
        customer: [String: String]? = nil
    ) throws(ValidationError) {
        self.storeID = storeID
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.partySize = partySize
        self.topic = topic
        self.notes = notes
        self.customerID = customerID
        self.customer = customer
        try validate()
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        try ReservationRules.checkDetails(
            startsAt: startsAt,
            endsAt: endsAt,
            partySize: partySize,
            topic: topic,
            notes: notes,
            strict: true
        )
        switch (customerID, customer) {
        case (nil, nil):
            throw ValidationError(
                field: "customerID",
                code: .empty,
                reason: "give either customerID or customer form values"
            )
        case (.some, .some):
            throw ValidationError(
                field: "customer",
                code: .invalidFormat,
                reason: "give either customerID or customer form values, not both"
            )
        default: break
        }
    }

    private enum CodingKeys: String, CodingKey {
        case storeID, startsAt, endsAt, partySize, topic, notes, customerID, customer
    }

    /// Decodes and validates a request; unknown keys are ignored.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        storeID = try c.decodeUUID(.storeID)
        startsAt = try c.decodeInstant(.startsAt)
        endsAt = try c.decodeInstant(.endsAt)
        partySize = try c.decode(Int.self, forKey: .partySize)
        topic = try c.decode(String.self, forKey: .topic)
        notes = try c.decodeIfPresent(String.self, forKey: .notes)
        customerID = try c.contains(.customerID) ? c.decodeUUID(.customerID) : nil
        customer = try c.decodeIfPresent([String: String].self, forKey: .customer)
        do { try validate() } catch {
            throw c.wrapped(error, at: CodingKeys(stringValue: error.field))
        }
    }

    /// Encodes the request; absent optionals are left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeUUID(storeID, forKey: .storeID)
        try c.encodeInstant(startsAt, forKey: .startsAt)
        try c.encodeInstant(endsAt, forKey: .endsAt)
        try c.encode(partySize, forKey: .partySize)
        try c.encode(topic, forKey: .topic)
        try c.encodeIfPresent(notes, forKey: .notes)
        if let customerID { try c.encodeUUID(customerID, forKey: .customerID) }
        try c.encodeIfPresent(customer, forKey: .customer)
    }
}

/// The body of `PATCH /v1/reservations/{id}`: any of the fields; absent ones stay as they are.
///
/// Rules: at least one field; `partySize` 1…50; `topic` non-empty, single line, at most 200
/// characters; `notes` at most 2000 (an empty string clears them). `endsAt` after `startsAt`
/// is checked by the server against the merged reservation.
public struct ReservationChanges: Sendable, Hashable, Codable {
    /// A new start.
    public var startsAt: Date?
    /// A new end.
    public var endsAt: Date?
    /// A new party size.
    public var partySize: Int?
    /// A new topic.
    public var topic: String?
    /// New notes; `""` clears them.
    public var notes: String?

    /// Makes and validates a change set.
    public init(
        startsAt: Date? = nil,
        endsAt: Date? = nil,
        partySize: Int? = nil,
        topic: String? = nil,
        notes: String? = nil
    ) throws(ValidationError) {
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.partySize = partySize
        self.topic = topic
        self.notes = notes
        try validate()
    }

    /// True when no field is set.
    public var isEmpty: Bool {
        startsAt == nil && endsAt == nil && partySize == nil && topic == nil && notes == nil
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        guard !isEmpty else {
            throw ValidationError(
                field: "",
                code: .empty,
                reason: "give at least one of startsAt, endsAt, partySize, topic, notes"
            )
        }
        if let startsAt, let endsAt {
            try ReservationRules.checkOrder(startsAt: startsAt, endsAt: endsAt)
        }
        if let partySize { try ReservationRules.checkPartySize(partySize) }
        if let topic { try ReservationRules.checkTopic(topic, strict: true) }
        if let notes { try ReservationRules.checkNotes(notes, strict: true) }
    }

    private enum CodingKeys: String, CodingKey { case startsAt, endsAt, partySize, topic, notes }

    /// Decodes and validates a change set; unknown keys are ignored.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        startsAt = try c.decodeInstantIfPresent(.startsAt)
        endsAt = try c.decodeInstantIfPresent(.endsAt)
        partySize = try c.decodeIfPresent(Int.self, forKey: .partySize)
        topic = try c.decodeIfPresent(String.self, forKey: .topic)
        notes = try c.decodeIfPresent(String.self, forKey: .notes)
        do { try validate() } catch {
            throw c.wrapped(
                error,
                at: error.field.isEmpty ? nil : CodingKeys(stringValue: error.field)
            )
        }
    }

    /// Encodes the set fields only.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if let startsAt { try c.encodeInstant(startsAt, forKey: .startsAt) }
        if let endsAt { try c.encodeInstant(endsAt, forKey: .endsAt) }
        try c.encodeIfPresent(partySize, forKey: .partySize)
        try c.encodeIfPresent(topic, forKey: .topic)
        try c.encodeIfPresent(notes, forKey: .notes)
    }
}

/// The body of `POST /v1/customers`: form values by field name, checked against the store's
/// customer form (the global form without `storeID`).
public struct NewCustomer: Sendable, Hashable, Codable {
    /// The store whose form applies, if any.
    public var storeID: UUID?
    /// The form values.
    public var fields: [String: String]

    /// A request from its parts.
    public init(storeID: UUID? = nil, fields: [String: String]) {
        self.storeID = storeID
        self.fields = fields
    }

    private enum CodingKeys: String, CodingKey { case storeID, fields }

    /// Decodes a request; `storeID` must be a UUID when present.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        storeID = try c.contains(.storeID) ? c.decodeUUID(.storeID) : nil
        fields = try c.decode([String: String].self, forKey: .fields)
    }

    /// Encodes the request.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if let storeID { try c.encodeUUID(storeID, forKey: .storeID) }
        try c.encode(fields, forKey: .fields)
    }
}

/// The answer of `GET /v1/config/client`: the configuration for one app and store.
public struct ClientConfigurationResponse: Sendable, Hashable, Codable {
    /// The configuration, with `minimumClientVersion` the minimum for the app asked about.
    public var configuration: ClientConfiguration
    /// The store asked about, when one was.
    public var store: Store?
    /// Every flag resolved for the store (global defaults without one).
    public var flags: [String: FlagValue]
    /// True when the client's version is below the minimum: it must update first.
    public var updateRequired: Bool

    /// A response from its parts.
    public init(
        configuration: ClientConfiguration,
        store: Store?,
        flags: [String: FlagValue],
        updateRequired: Bool
    ) {
        self.configuration = configuration
        self.store = store
        self.flags = flags
        self.updateRequired = updateRequired
    }
}

/// The answer of `GET /health`.
public struct ServerHealth: Sendable, Hashable, Codable {
    /// `ok`, or `unavailable` when the database does not answer.
    public var status: String
    /// `sqlite` or `postgres`.
    public var database: String
    /// The server's suite version.
    public var version: String

    /// A health answer from its parts.
    public init(status: String, database: String, version: String) {
        self.status = status
        self.database = database
        self.version = version
    }
}

/// The stable `type` URIs of store-server's problem documents (docs/API.md). Auth's own
/// (`…/problems/auth/…`) are in Auth's `AuthProblemType`.
public enum ProblemType {
    /// Base of every Shopfloor problem type.
    public static let base = "https://shopfloor.dev/problems/"
    /// 400: malformed JSON, query parameter, cursor or path id.
    public static let badRequest = base + "bad-request"
    /// 422: a value breaks a rule; see ``APIProblem/errors``.
    public static let validationFailed = base + "validation-failed"
    /// 404: no such reservation, customer, product, store or route.
    public static let notFound = base + "not-found"
    /// 409: a status move the transition table does not allow; see ``APIProblem/from``.
    public static let invalidTransition = base + "invalid-transition"
    /// 409: an edit of a reservation whose status keeps it as it is (``ReservationRules``).
    public static let notEditable = base + "not-editable"
    /// 412: `If-Match` names an old version; see ``APIProblem/currentVersion``.
    public static let versionMismatch = base + "version-mismatch"
    /// 428: a `PATCH` without `If-Match`.
    public static let preconditionRequired = base + "precondition-required"
    /// 422: one `Idempotency-Key` with a different method, path or body.
    public static let idempotencyKeyReused = base + "idempotency-key-reused"
    /// 409: the first request with this `Idempotency-Key` is still running after the wait
    /// (30 s); retry after `Retry-After`.
    public static let idempotencyKeyInUse = base + "idempotency-key-in-use"
    /// 403: the caller's role does not allow it (apps exit 13).
    public static let forbidden = base + "forbidden"
    /// 403: a flag turns the action off for the store; see ``APIProblem/flag``.
    public static let featureDisabled = base + "feature-disabled"
    /// 413: the body is over the limit.
    public static let payloadTooLarge = base + "payload-too-large"
    /// 429: too many failed sign-ins, or too many requests or sign-ins at once from one client
    /// address or user; see the `Retry-After` header.
    public static let rateLimited = base + "rate-limited"
    /// 426: reserved: the client is below the minimum version.
    public static let updateRequired = base + "update-required"
    /// 503: the database does not answer; retry later.
    public static let unavailable = base + "unavailable"
    /// 500: an internal error; `instance` holds the request id.
    public static let `internal` = base + "internal"
}

/// An RFC 9457 problem document as store-server sends it (`application/problem+json`), with
/// the extension members of docs/API.md.
public struct APIProblem: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// One field's problem in a `validation-failed` document.
    public struct FieldError: Sendable, Hashable, Codable {
        /// The field's name or dotted path.
        public var field: String
        /// A stable code (`FormFieldError.Code` or `ValidationError.Code` raw values).
        public var code: String
        /// A sentence for people.
        public var message: String

        /// A field error from its parts.
        public init(field: String, code: String, message: String) {
            self.field = field
            self.code = code
            self.message = message
        }

        /// The field error for a form problem.
        public init(_ error: FormFieldError) {
            self.init(field: error.field, code: error.code.rawValue, message: error.message)
        }

        /// The field error for a model rule.
        public init(_ error: ValidationError) {
            self.init(
                field: error.field,
                code: error.code.rawValue,
                message: error.field.isEmpty ? error.reason : "\(error.field) \(error.reason)"
            )
        }
    }

    /// The stable kind (``ProblemType``).
    public var type: String
    /// A short summary of the kind.
    public var title: String
    /// The HTTP status.
    public var status: Int
    /// What was wrong with this request, naming the input.
    public var detail: String?
    /// The request id, for `internal` problems.
    public var instance: String?
    /// `validation-failed`: every field problem.
    public var errors: [FieldError]?
    /// `invalid-transition`: the current status.
    public var from: Reservation.Status?
    /// `invalid-transition`: the status asked for.
    public var to: Reservation.Status?
    /// `version-mismatch`: the reservation's current version.
    public var currentVersion: Int?
    /// `feature-disabled`: the flag that turns the action off.
    public var flag: String?

    /// A problem from its parts.
    public init(
        type: String,
        title: String,
        status: Int,
        detail: String? = nil,
        instance: String? = nil,
        errors: [FieldError]? = nil,
        from: Reservation.Status? = nil,
        to: Reservation.Status? = nil,
        currentVersion: Int? = nil,
        flag: String? = nil
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.errors = errors
        self.from = from
        self.to = to
        self.currentVersion = currentVersion
        self.flag = flag
    }

    /// The media type problem documents are sent with.
    public static let mediaType = "application/problem+json"

    /// `status type: detail`.
    public var description: String { "\(status) \(type): \(detail ?? title)" }
}
