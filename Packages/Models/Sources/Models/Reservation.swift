public import Foundation

/// A customer's appointment at a store (a fitting, a consultation, a pickup).
///
/// Rules (``ReservationRules``, checked by ``validate()``, the initialiser and decoding):
/// `endsAt` after `startsAt`; `partySize` 1…50; `topic` non-empty, single line, at most 200
/// characters; `notes` at most 2000; `version` in 1…2⁵³. Edits go through
/// ``applying(_:storeMaximumPartySize:)``, status changes through ``transition(to:)``.
public struct Reservation: Sendable, Hashable, Codable, Identifiable {
    /// The reservation's id.
    public var id: UUID
    /// The code the customer shows or types, also on the pass QR.
    public var confirmationCode: ConfirmationCode
    /// Optimistic-concurrency version, starting at 1; ``transition(to:)`` bumps it.
    public var version: Int
    /// Where the reservation is in its lifecycle.
    public var status: Status
    /// The first instant of the slot.
    public var startsAt: Date
    /// The instant the slot ends (exclusive).
    public var endsAt: Date
    /// The store it is at.
    public var storeID: UUID
    /// The customer who made it.
    public var customerID: UUID
    /// How many people come, 1…50.
    public var partySize: Int
    /// What it is about, e.g. "Suit fitting".
    public var topic: String
    /// Free-text notes.
    public var notes: String?

    /// Makes and validates a reservation.
    public init(
        id: UUID = UUID(),
        confirmationCode: ConfirmationCode = .random(),
        version: Int = 1,
        status: Status = .requested,
        startsAt: Date,
        endsAt: Date,
        storeID: UUID,
        customerID: UUID,
        partySize: Int = 1,
        topic: String,
        notes: String? = nil
    ) throws(ValidationError) {
        self.id = id
        self.confirmationCode = confirmationCode
        self.version = version
        self.status = status
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.storeID = storeID
        self.customerID = customerID
        self.partySize = partySize
        self.topic = topic
        self.notes = notes
        try validate()
    }

    /// The slot's length.
    public var duration: TimeInterval { endsAt.timeIntervalSince(startsAt) }

    /// Moves to `next` if the lifecycle allows it and bumps ``version``; otherwise throws and
    /// leaves the reservation unchanged.
    public mutating func transition(to next: Status) throws(Status.TransitionError) {
        try status.transition(to: next)
        version += 1
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        guard ModelLimits.version.contains(version) else {
            throw ValidationError(
                field: "version",
                code: .outOfRange,
                reason: "\(version) is outside 1…2^53"
            )
        }
        try ReservationRules.checkDetails(
            startsAt: startsAt,
            endsAt: endsAt,
            partySize: partySize,
            topic: topic,
            notes: notes
        )
    }

    private enum CodingKeys: String, CodingKey {
        case id, confirmationCode, version, status, startsAt, endsAt, storeID, customerID,
            partySize, topic, notes
    }

    /// Decodes and validates a reservation; unknown keys are ignored.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeUUID(.id)
        confirmationCode = try c.decode(ConfirmationCode.self, forKey: .confirmationCode)
        version = try c.decode(Int.self, forKey: .version)
        status = try c.decode(Status.self, forKey: .status)
        startsAt = try c.decodeInstant(.startsAt)
        endsAt = try c.decodeInstant(.endsAt)
        storeID = try c.decodeUUID(.storeID)
        customerID = try c.decodeUUID(.customerID)
        partySize = try c.decode(Int.self, forKey: .partySize)
        topic = try c.decode(String.self, forKey: .topic)
        notes = try c.decodeIfPresent(String.self, forKey: .notes)
        do { try validate() } catch {
            throw c.wrapped(error, at: CodingKeys(stringValue: error.field))
        }
    }

    /// Encodes the reservation; absent `notes` is left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeUUID(id, forKey: .id)
        try c.encode(confirmationCode, forKey: .confirmationCode)
        try c.encode(version, forKey: .version)
        try c.encode(status, forKey: .status)
        try c.encodeInstant(startsAt, forKey: .startsAt)
        try c.encodeInstant(endsAt, forKey: .endsAt)
        try c.encodeUUID(storeID, forKey: .storeID)
        try c.encodeUUID(customerID, forKey: .customerID)
        try c.encode(partySize, forKey: .partySize)
        try c.encode(topic, forKey: .topic)
        try c.encodeIfPresent(notes, forKey: .notes)
    }
}

extension Reservation {
    /// A reservation's lifecycle state. Raw values are the wire values.
    ///
    /// Allowed transitions (``transitions``; everything else is a ``TransitionError``):
    ///
    /// | from | to |
    /// |---|---|
    /// | requested | confirmed, cancelled |
    /// | confirmed | checkedIn, cancelled, noShow |
    /// | checkedIn | completed |
    /// | completed, cancelled, noShow | none (terminal) |
    public enum Status: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// Asked for by the customer, not yet accepted by the store.
        case requested
        /// Accepted by the store.
        case confirmed
        /// The customer arrived.
        case checkedIn
        /// The appointment took place.
        case completed
        /// Called off by the customer or the store.
        case cancelled
        /// The customer did not come.
        case noShow

        /// An attempt to move between two states the table does not connect.
        public struct TransitionError: Error, Sendable, Equatable, CustomStringConvertible {
            /// The state the reservation was in.
            public let from: Status
            /// The state that was asked for.
            public let to: Status

            /// The error for moving from `from` to `to`.
            public init(from: Status, to: Status) {
                self.from = from
                self.to = to
            }
            /// `cannot go from completed to cancelled (completed is final)`.
            public var description: String {
                let allowed = Status.transitions[from, default: []]
                if allowed.isEmpty { return "cannot go from \(from) to \(to) (\(from) is final)" }
                let names = Status.allCases.filter(allowed.contains).map(\.rawValue).joined(
                    separator: ", "
                )
                return "cannot go from \(from) to \(to) (allowed from \(from): \(names))"
            }
        }

        /// The transition table: for each state, the states it may move to.
        public static let transitions: [Status: Set<Status>] = [
            .requested: [.confirmed, .cancelled],
            .confirmed: [.checkedIn, .cancelled, .noShow],
            .checkedIn: [.completed],
            .completed: [],
            .cancelled: [],
            .noShow: [],
        ]

        /// True when the table allows moving from this state to `next`.
        public func canTransition(to next: Status) -> Bool {
            Self.transitions[self, default: []].contains(next)
        }

        /// True for states with no way out.
        public var isTerminal: Bool { Self.transitions[self, default: []].isEmpty }

        /// Moves to `next`, or throws a ``TransitionError`` naming both states.
        public mutating func transition(to next: Status) throws(TransitionError) {
            guard canTransition(to: next) else { throw TransitionError(from: self, to: next) }
            self = next
        }

        /// The raw (wire) value.
        public var description: String { rawValue }

        /// Decodes a wire value, naming the allowed ones on failure.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            self = try container.validating { () throws(ValidationError) in
                guard let status = Status(rawValue: text) else {
                    throw ValidationError(
                        field: "status",
                        code: .unknownValue,
                        reason:
                            "\"\(text.prefix(30))\" is not one of \(Status.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                return status
            }
        }

        /// Encodes the raw value.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }
}
