public import Foundation
public import Models

/// How a user names a reservation: its id (a UUID) or its confirmation code, told apart by
/// form (`UUID(uuidString:)` first, then a code in any accepted form, including a pass's
/// `shopfloor://reservations/CODE`).
public enum ReservationReference: Sendable, Hashable, CustomStringConvertible {
    /// A reservation id.
    case id(UUID)
    /// A confirmation code.
    case code(ConfirmationCode)

    /// Parses an argument.
    /// - Throws: ``SuiteClientError`` `invalidInput` naming the text.
    public init(parsing text: String) throws(SuiteClientError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let id = UUID(uuidString: trimmed) {
            self = .id(id)
            return
        }
        do {
            self = .code(try ConfirmationCode(passPayload: trimmed))
        } catch {
            throw SuiteClientError(
                .invalidInput,
                "'\(trimmed.prefix(80))' is neither a reservation id (a UUID) nor a confirmation code (XXXX-XXXX): \(error.reason)",
                cause: error
            )
        }
    }

    /// The id or the code as people write it.
    public var description: String {
        switch self {
        case .id(let id): id.uuidString
        case .code(let code): code.description
        }
    }
}

/// A reservation search (`GET /v1/reservations`).
public struct ReservationQuery: Sendable, Hashable {
    /// Matches the customer's name, email, phone, or the confirmation code.
    public var text: String?
    /// A calendar day, `YYYY-MM-DD`, in each reservation's store's time zone.
    public var date: String?
    /// Only these statuses (any when empty).
    public var statuses: [Reservation.Status]
    /// Only this store.
    public var store: UUID?
    /// Every store of the server, not only the caller's (`allStores=true`; administrators
    /// only, others are refused with 403: exit 13).
    public var allStores: Bool
    /// Page size (1…200; the server's default 50 when nil).
    public var limit: Int?
    /// The previous page's `nextCursor`.
    public var cursor: String?

    /// Creates a query.
    public init(
        text: String? = nil,
        date: String? = nil,
        statuses: [Reservation.Status] = [],
        store: UUID? = nil,
        allStores: Bool = false,
        limit: Int? = nil,
        cursor: String? = nil
    ) {
        self.text = text
        self.date = date
        self.statuses = statuses
        self.store = store
        self.allStores = allStores
        self.limit = limit
        self.cursor = cursor
    }

    var queryItems: [URLQueryItem] {
        var items: [URLQueryItem] = []
        if let text { items.append(URLQueryItem(name: "query", value: text)) }
        if let date { items.append(URLQueryItem(name: "date", value: date)) }
        if !statuses.isEmpty {
            items.append(
                URLQueryItem(name: "status", value: statuses.map(\.rawValue).joined(separator: ","))
            )
        }
        if let store { items.append(URLQueryItem(name: "store", value: store.uuidString)) }
        if allStores { items.append(URLQueryItem(name: "allStores", value: "true")) }
        if let limit { items.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let cursor { items.append(URLQueryItem(name: "cursor", value: cursor)) }
        return items
    }

    /// Whether a reservation matches, as the server decides (for offline answers from the
    /// cache): text against names, email, phone digits and the code; the day in the
    /// reservation's store's time zone.
    public func matches(_ detail: ReservationDetail) -> Bool {
        if let store, detail.reservation.storeID != store { return false }
        if !statuses.isEmpty, !statuses.contains(detail.reservation.status) { return false }
        if let date, Self.day(of: detail.reservation.startsAt, in: detail.store) != date {
            return false
        }
        if let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            let customer = detail.customer
            let needle = text.lowercased()
            var haystack = [
                customer.givenName, customer.familyName, customer.displayName,
            ].map { $0.lowercased() }
            if let email = customer.email { haystack.append(email.value.lowercased()) }
            if haystack.contains(where: { $0.contains(needle) }) { return true }
            let digits = text.filter(\.isNumber)
            if digits.count >= 3, let phone = customer.phone,
                phone.e164.filter(\.isNumber).contains(digits)
            {
                return true
            }
            if let code = try? ConfirmationCode(passPayload: text),
                code == detail.reservation.confirmationCode
            {
                return true
            }
            return false
        }
        return true
    }

    /// `YYYY-MM-DD` of `instant` in the store's time zone.
    public static func day(of instant: Date, in store: Store) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = store.resolvedTimeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: instant)
        return String(
            format: "%04d-%02d-%02d",
            parts.year ?? 0,
            parts.month ?? 0,
            parts.day ?? 0
        )
    }
}

/// What a status change (check-in, cancel) did.
public enum TransitionOutcome: Sendable, Hashable {
    /// The server made the change; the reservation as it is now.
    case changed(ReservationDetail)
    /// The reservation already had that status (a second check-in): nothing changed.
    case alreadyDone(ReservationDetail)
}

extension SuiteClient {
    static let reservationNamespace = "reservation"
    static let pageNamespace = "reservations"

    /// A page of reservations; offline, the same query's kept page, else the kept
    /// reservations that match it (``ReservationQuery/matches(_:)``), upcoming at `now` first
    /// as the server lists them (``ReservationDetail/upcomingFirst(now:)``).
    public func reservations(_ query: ReservationQuery, now: Date = Date())
        async throws(SuiteClientError) -> Fetched<Page<ReservationDetail>>
    {
        do {
            let page = try await get(
                "/v1/reservations",
                query: query.queryItems,
                as: Page<ReservationDetail>.self,
                cacheNamespace: Self.pageNamespace,
                what: "this reservation list"
            )
            if !page.isFromCache { keep(page.value.items) }
            return page
        } catch {
            guard error.code == .offline else { throw error }
            let kept = keptReservations().filter { query.matches($0.detail) }
            guard !kept.isEmpty else { throw error }
            let times = kept.map(\.fetchedAt)
            let items = kept.map { $0.detail }.sorted(by: ReservationDetail.upcomingFirst(now: now))
            // Not the saved answer of this query: a partial list, labelled as one.
            return Fetched(
                value: Page(items: Array(items.prefix(query.limit ?? 50)), nextCursor: nil),
                origin: .kept(
                    KeptData(count: kept.count, oldest: times.min()!, newest: times.max()!),
                    reason: error.offlineReason
                )
            )
        }
    }

    /// One reservation by id or code; offline, the kept copy (found by id or code among
    /// every reservation kept from earlier lists and lookups). Kept once, under its code
    /// (``keptKey(_:)``), however it was asked for.
    public func reservation(_ reference: ReservationReference) async throws(SuiteClientError)
        -> Fetched<ReservationDetail>
    {
        let path: String
        switch reference {
        case .id(let id): path = "/v1/reservations/\(id.uuidString)"
        case .code(let code): path = "/v1/reservations/by-code/\(code.description)"
        }
        do {
            return try await get(
                path,
                as: ReservationDetail.self,
                cacheNamespace: Self.reservationNamespace,
                what: "reservation \(reference)"
            ) { detail in keptKey(detail) }
        } catch {
            switch error.code {
            case .notFound:
                throw SuiteClientError(
                    .notFound,
                    "no reservation \(reference) on \(server)",
                    status: error.status,
                    problem: error.problem
                )
            case .offline:
                let match = keptReservations().first { kept in
                    switch reference {
                    case .id(let id): kept.detail.id == id
                    case .code(let code): kept.detail.reservation.confirmationCode == code
                    }
                }
                guard let match else { throw error }
                return Fetched(
                    value: match.detail,
                    origin: .cache(fetchedAt: match.fetchedAt, reason: error.offlineReason)
                )
            default:
                throw error
            }
        }
    }

    /// Checks a reservation in (`POST …/check-in`, idempotent). A reservation already
    /// checked in is ``TransitionOutcome/alreadyDone(_:)``, not an error.
    public func checkIn(_ id: UUID) async throws(SuiteClientError) -> TransitionOutcome {
        try await transition(id, action: "check-in", status: .checkedIn)
    }

    /// Cancels a reservation (`POST …/cancel`, idempotent). One already cancelled is
    /// ``TransitionOutcome/alreadyDone(_:)``.
    public func cancel(_ id: UUID) async throws(SuiteClientError) -> TransitionOutcome {
        try await transition(id, action: "cancel", status: .cancelled)
    }

    private func transition(_ id: UUID, action: String, status: Reservation.Status)
        async throws(SuiteClientError) -> TransitionOutcome
    {
        do {
            let response = try await write(
                "POST",
                "/v1/reservations/\(id.uuidString)/\(action)",
                as: ReservationDetail.self,
                what: "the \(action) of reservation \(id.uuidString)",
                check: "\(configuration.appName) show \(id.uuidString)"
            )
            keep([response.value])
            return .changed(response.value)
        } catch {
            if error.code == .conflict, let problem = error.problem,
                problem.type == ProblemType.invalidTransition, problem.from == status
            {
                let current = try await reservation(.id(id))
                return .alreadyDone(current.value)
            }
            if error.code == .notFound {
                throw SuiteClientError(
                    .notFound,
                    "no reservation \(id.uuidString) on \(server)",
                    status: error.status
                )
            }
            throw error
        }
    }

    /// Changes a reservation (`PATCH` with `If-Match: "<version>"`).
    ///
    /// A `version-mismatch` whose current reservation already holds exactly these changes
    /// (an earlier attempt of this call was applied and its answer lost) is a success;
    /// otherwise it is a `conflict` naming both versions.
    public func reschedule(_ id: UUID, version: Int, changes: ReservationChanges)
        async throws(SuiteClientError) -> ReservationDetail
    {
        let body: Data
        do { body = try ModelsJSON.makeEncoder().encode(changes) } catch {
            throw SuiteClientError(.invalidInput, "the changes cannot be encoded: \(error)")
        }
        do {
            let response = try await write(
                "PATCH",
                "/v1/reservations/\(id.uuidString)",
                body: body,
                headers: ["If-Match": "\"\(version)\""],
                as: ReservationDetail.self,
                what: "the change of reservation \(id.uuidString)",
                check: "\(configuration.appName) show \(id.uuidString)"
            )
            keep([response.value])
            return response.value
        } catch {
            guard error.code == .conflict, error.problem?.type == ProblemType.versionMismatch
            else { throw error }
            let current = try await reservation(.id(id)).value
            let now = current.reservation
            let applied =
                (changes.startsAt.map { $0 == now.startsAt } ?? true)
                && (changes.endsAt.map { $0 == now.endsAt } ?? true)
                && (changes.partySize.map { $0 == now.partySize } ?? true)
                && (changes.topic.map { $0 == now.topic } ?? true)
                && now.version == version + 1
            if applied { return current }
            throw SuiteClientError(
                .conflict,
                "reservation \(now.confirmationCode) was changed by someone else: you edited version \(version), it is now version \(now.version); look at it again (`\(configuration.appName) show \(now.confirmationCode)`) and repeat the change if it still applies",
                status: error.status,
                problem: error.problem
            )
        }
    }

    /// Books a reservation (`POST /v1/reservations`, with an `Idempotency-Key`).
    public func createReservation(_ new: NewReservation) async throws(SuiteClientError)
        -> ReservationDetail
    {
        let body: Data
        do { body = try ModelsJSON.makeEncoder().encode(new) } catch {
            throw SuiteClientError(.invalidInput, "the reservation cannot be encoded: \(error)")
        }
        // Who to look for if the answer is lost: the customer's e-mail, phone or name.
        let form = new.customer ?? [:]
        let who = form["email"] ?? form["phone"] ?? form["name"] ?? form.values.sorted().first
        let response = try await write(
            "POST",
            "/v1/reservations",
            body: body,
            as: ReservationDetail.self,
            what: "the new reservation",
            check: who.map { "\(configuration.appName) search '\($0)'" }
                ?? "\(configuration.appName) list --date \(RFC3339.string(from: new.startsAt).prefix(10))"
        )
        keep([response.value])
        return response.value
    }

    /// One store (`GET /v1/stores/{id}`), kept for offline use.
    public func store(_ id: UUID) async throws(SuiteClientError) -> Fetched<Store> {
        try await get(
            "/v1/stores/\(id.uuidString)",
            as: Store.self,
            cacheNamespace: "store",
            what: "store \(id.uuidString)"
        )
    }

    /// Where a reservation is kept: the key of its lookup by code, the one counters make
    /// (a code read off a confirmation), so an offline `show CODE` reads one entry, and the
    /// latest copy (a check-in's answer replaces the lookup's). A lookup by id offline finds
    /// it among the kept reservations.
    func keptKey(_ detail: ReservationDetail) -> ResponseKey {
        let code = detail.reservation.confirmationCode.description
        return cacheKey(
            namespace: Self.reservationNamespace,
            request: request(path: "/v1/reservations/by-code/\(code)")
        )
    }

    /// Keeps each reservation for offline lookups (under ``keptKey(_:)``).
    func keep(_ details: [ReservationDetail]) {
        let encoder = ModelsJSON.makeEncoder()
        for detail in details {
            guard let body = try? encoder.encode(detail) else { continue }
            try? cache.write(keptKey(detail), body: body, etag: "\"\(detail.reservation.version)\"")
        }
    }

    /// Every kept reservation of this server, the newest copy of each.
    func keptReservations() -> [(detail: ReservationDetail, fetchedAt: Date)] {
        let decoder = ModelsJSON.makeDecoder()
        var newest: [UUID: (detail: ReservationDetail, fetchedAt: Date)] = [:]
        for entry in cache.entries(namespace: Self.reservationNamespace)
        where entry.key.name.hasPrefix(server.origin + " ") {
            guard let detail = try? decoder.decode(ReservationDetail.self, from: entry.body) else {
                continue
            }
            if let seen = newest[detail.id], seen.fetchedAt >= entry.fetchedAt { continue }
            newest[detail.id] = (detail, entry.fetchedAt)
        }
        return Array(newest.values)
    }
}

extension SuiteClientError {
    /// Why the server could not be used, for a copy found among the kept reservations: the
    /// reason without the "no copy … was kept" that ``SuiteClient/get(_:query:as:cacheNamespace:what:)``
    /// adds when the request itself has no kept answer (a copy was found after all).
    var offlineReason: String {
        if let underlying = cause as? SuiteClientError, underlying.code == .offline {
            return underlying.message
        }
        return message
    }
}
