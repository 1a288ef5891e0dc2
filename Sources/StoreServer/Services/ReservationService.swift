internal import Foundation
internal import Logging
internal import Models

/// Reservations: search, booking, status changes and edits, each checked against Models'
/// ``ReservationRules`` and the store's flags; a refusal is an ``APIError`` that says why.
struct ReservationService: Sendable {
    let database: StoreDatabase
    let repository: Repository
    let config: ConfigService
    let customers: CustomerService
    let logger: Logger
    /// The time reservations are judged by (which are upcoming); tests fix it.
    var now: @Sendable () -> Date = { Date() }

    /// How often a compare-and-set write is retried when another change came first.
    private static let attempts = 20

    /// Which reservations a search wants: its text, day and statuses, one store (id or short
    /// name), or every store of the server (`allStores`, admins only); by default the caller's
    /// stores.
    struct Search: Sendable {
        var filter = Repository.ReservationFilter()
        var store: String?
        var allStores = false
    }

    /// A page of reservations matching `search`, within the caller's stores, upcoming first
    /// (``Repository/reservations(_:_:scope:now:)``).
    /// - Throws: a 404 for a store outside the caller's, a 403 when a role that does not see
    ///   every store asks for all of them.
    func search(_ search: Search, _ page: PageRequest, for caller: SignedIn) async throws -> Page<
        ReservationDetail
    > {
        var filter = search.filter
        if search.allStores, !caller.access.role.seesEveryStore {
            throw APIError.forbidden("listing every store's reservations", role: caller.access.role)
        }
        if let reference = search.store {
            guard let store = try await repository.store(reference: reference, scope: caller.scope)
            else { throw APIError.notFound("store \(reference.prefix(64)) does not exist") }
            filter.storeID = store.id
        }
        return try await repository.reservations(filter, page, scope: caller.scope, now: now())
    }

    /// The reservation `id`.
    /// - Throws: a 404 when there is none among the caller's stores.
    func reservation(id: UUID, for caller: SignedIn) async throws -> ReservationDetail {
        guard let detail = try await repository.reservation(id: id, scope: caller.scope) else {
            throw APIError.notFound("reservation \(id.uuidString) does not exist")
        }
        return detail
    }

    /// The reservation with confirmation code `code`.
    /// - Throws: a 404 when there is none among the caller's stores.
    func reservation(code: ConfirmationCode, for caller: SignedIn) async throws
        -> ReservationDetail
    {
        guard let detail = try await repository.reservation(code: code, scope: caller.scope) else {
            throw APIError.notFound("no reservation has confirmation code \(code)")
        }
        return detail
    }

    /// Books a reservation, confirmed at once, for an existing customer or a new one from the
    /// form values.
    /// - Throws: a 422 naming the field (unknown store or customer, a rule broken, a time outside
    ///   the store's opening hours, a form field),
    ///   a 403 when the store takes no new reservations.
    func create(_ new: NewReservation, for caller: SignedIn, now: Date = Date()) async throws
        -> ReservationDetail
    {
        let subject = caller.subject
        guard let store = try await repository.store(id: new.storeID, scope: caller.scope) else {
            throw APIError.unknownValue("storeID", "store \(new.storeID.uuidString) does not exist")
        }
        let snapshot = try await config.current()
        guard snapshot.isEnabled(KnownFlag.newReservationsEnabled, for: store) else {
            throw APIError.featureDisabled(KnownFlag.newReservationsEnabled, store: store)
        }
        do {
            try ReservationRules.checkPartySize(
                new.partySize,
                storeMaximum: snapshot.number(KnownFlag.maxPartySize, for: store)
            )
            try ReservationRules.checkOpeningHours(
                startsAt: new.startsAt,
                endsAt: new.endsAt,
                store: store
            )
        } catch {
            throw APIError.validation(error)
        }
        let customer: Customer
        var formValues: [String: String]?
        if let customerID = new.customerID {
            guard let found = try await repository.customer(id: customerID, scope: caller.scope)
            else {
                throw APIError.unknownValue(
                    "customerID",
                    "customer \(customerID.uuidString) does not exist"
                )
            }
            customer = found
        } else {
            let form = try await customers.newCustomer(
                from: new.customer ?? [:],
                store: store,
                now: now,
                prefix: "customer."
            )
            customer = form.customer
            formValues = form.values
        }
        for _ in 0..<5 {
            let reservation: Reservation
            do {
                reservation = try Reservation(
                    confirmationCode: .random(),
                    status: .confirmed,
                    startsAt: new.startsAt,
                    endsAt: new.endsAt,
                    storeID: store.id,
                    customerID: customer.id,
                    partySize: new.partySize,
                    topic: new.topic,
                    notes: new.notes
                )
            } catch {
                throw APIError.validation(error)
            }
            do {
                try await database.transaction { [customer, formValues] sql in
                    if let formValues {
                        try await Repository.insert(
                            customer,
                            formValues: formValues,
                            store: store.id,
                            on: sql
                        )
                    }
                    guard try await Repository.insert(reservation, store: store, now: now, on: sql)
                    else { throw CodeCollision() }
                }
            } catch is CodeCollision {
                // A confirmation code taken already (1 in 34 billion): draw another.
                continue
            }
            logger.info(
                "reservation created",
                metadata: [
                    "reservation": .string(reservation.id.uuidString), "by": .string(subject),
                ]
            )
            do {
                return try ReservationDetail(
                    reservation: reservation,
                    customer: customer,
                    store: store
                )
            } catch {
                throw APIError.validation(error)
            }
        }
        throw APIError.unavailable("could not draw a free confirmation code; retry")
    }

    /// Moves reservation `id` to `target` (check-in or cancel) when the transition table and
    /// the store's flag allow it.
    /// - Throws: a 404, a 403 (flag off), a 409 naming both states.
    func transition(_ id: UUID, to target: Reservation.Status, for caller: SignedIn) async throws
        -> ReservationDetail
    {
        let subject = caller.subject
        let flag = target == .checkedIn ? KnownFlag.checkInEnabled : KnownFlag.cancellationEnabled
        for _ in 0..<Self.attempts {
            let detail = try await reservation(id: id, for: caller)
            guard try await config.current().isEnabled(flag, for: detail.store) else {
                throw APIError.featureDisabled(flag, store: detail.store)
            }
            var reservation = detail.reservation
            do {
                try reservation.transition(to: target)
            } catch {
                throw APIError(
                    APIProblem(
                        type: ProblemType.invalidTransition,
                        title: "Status change not allowed",
                        status: 409,
                        detail: error.from == error.to
                            ? "reservation \(id.uuidString) is already \(error.to)"
                            : "reservation \(id.uuidString): \(error)",
                        from: error.from,
                        to: error.to
                    )
                )
            }
            if try await repository.update(
                reservation,
                store: detail.store,
                expectedVersion: detail.reservation.version,
                now: Date(),
                scope: caller.scope
            ) {
                logger.info(
                    "reservation status changed",
                    metadata: [
                        "reservation": .string(id.uuidString),
                        "status": .string(target.rawValue), "by": .string(subject),
                    ]
                )
                return try ReservationDetail(
                    reservation: reservation,
                    customer: detail.customer,
                    store: detail.store
                )
            }
        }
        throw APIError.unavailable("reservation \(id.uuidString) kept changing; retry")
    }

    /// Edits reservation `id` at version `expected` (its `If-Match`): only while its status
    /// allows edits, and only into a reservation that keeps every rule.
    /// - Throws: a 404, a 412 naming the current version, a 409 when the status keeps the
    ///   reservation as it is, a 422 naming the broken rule (a new time outside the store's
    ///   opening hours among them).
    func change(_ id: UUID, _ changes: ReservationChanges, expected: Int, for caller: SignedIn)
        async throws -> ReservationDetail
    {
        let subject = caller.subject
        let detail = try await reservation(id: id, for: caller)
        guard detail.reservation.version == expected else {
            throw Self.mismatch(id, current: detail.reservation.version, expected: expected)
        }
        let maximum =
            changes.partySize == nil
            ? nil : try await config.current().number(KnownFlag.maxPartySize, for: detail.store)
        let updated: Reservation
        do {
            updated = try detail.reservation.applying(changes, storeMaximumPartySize: maximum)
        } catch .notEditable(let refusal) {
            throw APIError(
                APIProblem(
                    type: ProblemType.notEditable,
                    title: "Reservation cannot be changed",
                    status: 409,
                    detail: "reservation \(id.uuidString): \(refusal)",
                    from: refusal.status
                )
            )
        } catch .invalid(let error) {
            throw APIError.validation(error)
        }
        if changes.startsAt != nil || changes.endsAt != nil {
            do {
                try ReservationRules.checkOpeningHours(
                    startsAt: updated.startsAt,
                    endsAt: updated.endsAt,
                    store: detail.store
                )
            } catch {
                throw APIError.validation(error)
            }
        }
        guard
            try await repository.update(
                updated,
                store: detail.store,
                expectedVersion: expected,
                now: Date(),
                scope: caller.scope
            )
        else {
            let current = try await reservation(id: id, for: caller)
            throw Self.mismatch(id, current: current.reservation.version, expected: expected)
        }
        logger.info(
            "reservation changed",
            metadata: ["reservation": .string(id.uuidString), "by": .string(subject)]
        )
        return try ReservationDetail(
            reservation: updated,
            customer: detail.customer,
            store: detail.store
        )
    }

    private static func mismatch(_ id: UUID, current: Int, expected: Int) -> APIError {
        APIError(
            APIProblem(
                type: ProblemType.versionMismatch,
                title: "Version mismatch",
                status: 412,
                detail: "reservation \(id.uuidString) is at version \(current), not \(expected)",
                currentVersion: current
            ),
            headers: [(.eTag, "\"\(current)\"")]
        )
    }
}

/// A confirmation code drawn twice; the booking's transaction is rolled back and retried.
private struct CodeCollision: Error {}
