internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models

/// The reservation routes (signed): search, show by id or code, book and the two status
/// changes (idempotent with `Idempotency-Key`), and edits with `If-Match`.
struct ReservationController {
    let service: ReservationService

    func addRoutes(to routes: RouteGroups) {
        routes.signed.get("/v1/reservations", use: search)
        routes.idempotent.post("/v1/reservations", use: create)
        routes.signed.get("/v1/reservations/by-code/{code}", use: showByCode)
        routes.signed.get("/v1/reservations/{id}", use: show)
        routes.signed.patch("/v1/reservations/{id}", use: change)
        routes.idempotent.post("/v1/reservations/{id}/check-in", use: checkIn)
        routes.idempotent.post("/v1/reservations/{id}/cancel", use: cancel)
    }

    @Sendable func search(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        let page = try Parse.page(request, cursorValues: Repository.reservationCursorValues)
        let query = request.uri.queryParameters
        var search = ReservationService.Search()
        search.filter.text = try Parse.searchText(request)
        if let date = query.get("date") {
            guard date.utf8.count == 10, (try? RFC3339.date(from: date + "T00:00:00Z")) != nil
            else {
                throw APIError.badRequest(
                    "query parameter 'date' must be a calendar day YYYY-MM-DD, got '\(date.prefix(20))'"
                )
            }
            search.filter.date = date
        }
        for value in query.getAll("status").flatMap({ $0.split(separator: ",") }) {
            let name = value.trimmingCharacters(in: .whitespaces)
            guard let status = Reservation.Status(rawValue: name) else {
                let known = Reservation.Status.allCases.map(\.rawValue).joined(separator: ", ")
                throw APIError.badRequest(
                    "query parameter 'status' has '\(name.prefix(30))'; use \(known)"
                )
            }
            if !search.filter.statuses.contains(status) { search.filter.statuses.append(status) }
        }
        if let store = query.get("store") {
            guard UUID(uuidString: store) != nil || Store.isShortName(store) else {
                throw APIError.badRequest(
                    "query parameter 'store' is neither a store id nor a short name: '\(store.prefix(40))'"
                )
            }
            search.store = store
        }
        if let all = query.get("allStores") {
            guard let value = Bool(all) else {
                throw APIError.badRequest("query parameter 'allStores' must be true or false")
            }
            search.allStores = value
        }
        return try Reply.json(try await service.search(search, page, for: try context.caller()))
    }

    @Sendable func show(_ request: Request, context: StoreRequestContext) async throws -> Response {
        let id = try Parse.id(context)
        return try Self.present(try await service.reservation(id: id, for: try context.caller()))
    }

    @Sendable func showByCode(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        var text = context.parameters.get("code") ?? ""
        if text.contains("%") { text = text.removingPercentEncoding ?? text }
        let code: ConfirmationCode
        do {
            code = try ConfirmationCode(passPayload: text)
        } catch {
            throw APIError.badRequest(
                "path parameter 'code' is not a confirmation code: \(ValidationError(error)?.reason ?? "unreadable")"
            )
        }
        return try Self.present(
            try await service.reservation(code: code, for: try context.caller())
        )
    }

    @Sendable func create(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        var request = request
        let new = try Parse.json(NewReservation.self, try await request.bodyBytes())
        let detail = try await service.create(new, for: try context.caller())
        return try Self.present(
            detail,
            status: .created,
            headers: [(.location, "/v1/reservations/\(detail.id.uuidString)")]
        )
    }

    @Sendable func change(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        let id = try Parse.id(context)
        guard let ifMatch = request.headers[.ifMatch] else {
            throw APIError(
                APIProblem(
                    type: ProblemType.preconditionRequired,
                    title: "If-Match required",
                    status: 428,
                    detail: "send If-Match with the reservation's ETag (its version)"
                )
            )
        }
        guard let expected = EntityTag.version(from: ifMatch) else {
            throw APIError.badRequest(
                "header 'If-Match' must be a reservation ETag such as \"3\", got '\(ifMatch.prefix(40))'"
            )
        }
        var request = request
        let changes = try Parse.json(ReservationChanges.self, try await request.bodyBytes())
        return try Self.present(
            try await service.change(
                id,
                changes,
                expected: expected,
                for: try context.caller()
            )
        )
    }

    @Sendable func checkIn(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        let id = try Parse.id(context)
        return try Self.present(
            try await service.transition(id, to: .checkedIn, for: try context.caller())
        )
    }

    @Sendable func cancel(_ request: Request, context: StoreRequestContext) async throws
        -> Response
    {
        let id = try Parse.id(context)
        return try Self.present(
            try await service.transition(id, to: .cancelled, for: try context.caller())
        )
    }

    /// A reservation as JSON with its version as the ETag.
    static func present(
        _ detail: ReservationDetail,
        status: HTTPResponse.Status = .ok,
        headers: [(HTTPField.Name, String)] = []
    ) throws -> Response {
        try Reply.json(
            detail,
            status: status,
            headers: headers + [(.eTag, "\"\(detail.reservation.version)\"")]
        )
    }
}
