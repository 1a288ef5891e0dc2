public import Foundation

/// The rules of a reservation, written once: the server checks every booking, status change and
/// edit against them, and clients use them to check input before they send it.
///
/// - Status changes follow ``Reservation/Status/transitions``.
/// - Only a reservation that is still ahead (``editableStatuses``: requested or confirmed) may
///   be edited: rescheduled, resized, retitled or annotated. A cancelled, completed, no-show or
///   checked-in one is kept as it was.
/// - The slot ends after it starts.
/// - The party is 1…50 people (``partySize``), and at most the store's `maxPartySize` flag
///   when the store sets one.
/// - The topic is a single line of 1…200 characters; notes are at most 2,000 characters (an
///   empty change clears them).
public enum ReservationRules {
    /// The party sizes any reservation may have.
    public static let partySize = ModelLimits.partySize
    /// The statuses in which a reservation's details may change.
    public static let editableStatuses: Set<Reservation.Status> = [.requested, .confirmed]

    /// Checks that a slot ends after it starts; the error names `endsAt`.
    public static func checkOrder(startsAt: Date, endsAt: Date) throws(ValidationError) {
        guard endsAt > startsAt else {
            throw ValidationError(
                field: "endsAt",
                code: .invalidOrder,
                reason:
                    "\(RFC3339.string(from: endsAt)) is not after startsAt \(RFC3339.string(from: startsAt))"
            )
        }
    }

    /// Checks a party size against ``partySize`` and, when given, the store's maximum (its
    /// `maxPartySize` flag); the error names `partySize`.
    public static func checkPartySize(_ size: Int, storeMaximum: Double? = nil)
        throws(ValidationError)
    {
        guard partySize.contains(size) else {
            throw ValidationError(
                field: "partySize",
                code: .outOfRange,
                reason: "\(size) is outside \(partySize.lowerBound)…\(partySize.upperBound)"
            )
        }
        if let storeMaximum, Double(size) > storeMaximum {
            throw ValidationError(
                field: "partySize",
                code: .outOfRange,
                reason: "partySize \(size) is above this store's maximum of \(Int(storeMaximum))"
            )
        }
    }

    /// Checks a topic: a single line of 1…200 characters; `strict` (what a client sends)
    /// also refuses C1 and bidi controls (``TextSafety/lineProblem(_:)``), while stored
    /// records keep the rule they were written under.
    public static func checkTopic(_ topic: String, strict: Bool = false) throws(ValidationError) {
        try Check.name(topic, field: "topic", strict: strict)
    }

    /// Checks notes: at most 2,000 characters, newlines allowed; `strict` (what a client
    /// sends) refuses every other control and bidi control (``TextSafety/notesProblem(_:)``).
    public static func checkNotes(_ notes: String, strict: Bool = false) throws(ValidationError) {
        try Check.text(notes, field: "notes", strict: strict)
    }

    /// Checks every rule of a reservation's details at once (order, party size, topic, notes).
    public static func checkDetails(
        startsAt: Date,
        endsAt: Date,
        partySize: Int,
        topic: String,
        notes: String?,
        strict: Bool = false
    ) throws(ValidationError) {
        try checkOrder(startsAt: startsAt, endsAt: endsAt)
        try checkPartySize(partySize)
        try checkTopic(topic, strict: strict)
        if let notes { try checkNotes(notes, strict: strict) }
    }

    /// Checks that a reservation in `status` may be edited.
    public static func checkEditable(_ status: Reservation.Status) throws(EditRefusal) {
        guard editableStatuses.contains(status) else { throw EditRefusal(status: status) }
    }

    /// A refused edit: the reservation's status keeps it as it is.
    public struct EditRefusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The status the reservation is in.
        public let status: Reservation.Status

        /// The refusal for a reservation in `status`.
        public init(status: Reservation.Status) { self.status = status }

        /// `a cancelled reservation cannot be changed; only requested or confirmed ones can`.
        public var description: String {
            "a \(status) reservation cannot be changed; only requested or confirmed ones can"
        }
    }

    /// Why ``Reservation/applying(_:storeMaximumPartySize:)`` refused a change.
    public enum ChangeError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The reservation's status does not allow edits.
        case notEditable(EditRefusal)
        /// The changed reservation would break a rule.
        case invalid(ValidationError)

        /// The refusal or the broken rule, for people.
        public var description: String {
            switch self {
            case .notEditable(let refusal): refusal.description
            case .invalid(let error): error.description
            }
        }
    }
}

extension Reservation {
    /// This reservation with `changes` applied and its version bumped, after checking the
    /// rules: the status must allow edits, and the merged reservation must keep every rule
    /// (`storeMaximumPartySize` is the store's `maxPartySize`, checked when the party size
    /// changes). An empty `notes` change clears the notes.
    public func applying(
        _ changes: ReservationChanges,
        storeMaximumPartySize: Double? = nil
    ) throws(ReservationRules.ChangeError) -> Reservation {
        do {
            try ReservationRules.checkEditable(status)
        } catch {
            throw .notEditable(error)
        }
        var updated = self
        if let startsAt = changes.startsAt { updated.startsAt = startsAt }
        if let endsAt = changes.endsAt { updated.endsAt = endsAt }
        if let partySize = changes.partySize { updated.partySize = partySize }
        if let topic = changes.topic { updated.topic = topic }
        if let notes = changes.notes { updated.notes = notes.isEmpty ? nil : notes }
        updated.version += 1
        do {
            try updated.validate()
            if changes.partySize != nil {
                try ReservationRules.checkPartySize(
                    updated.partySize,
                    storeMaximum: storeMaximumPartySize
                )
            }
        } catch {
            throw .invalid(error)
        }
        return updated
    }
}
