internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Logging
internal import Models
internal import NIOCore
internal import NIOPosix
internal import Synchronization

/// A route the server registers (method and OpenAPI-style path), for the OpenAPI check.
public struct RegisteredRoute: Sendable, Hashable, CustomStringConvertible {
    /// `GET`, `POST`, …
    public var method: String
    /// `/v1/reservations/{id}`.
    public var path: String
    /// `GET /v1/reservations/{id}`.
    public var description: String { "\(method) \(path)" }
}

/// Every route of the API.
struct Routes: Sendable {
    typealias Handler = @Sendable (Request, StoreRequestContext) async throws -> Response
    typealias SignedHandler =
        @Sendable (Request, [UInt8], SignedIn, StoreRequestContext) async throws -> Answer

    static let jsonLimit = 64 * 1024
    static let formLimit = 4 * 1024

    let context: ServerContext
    var repository: Repository { context.repository }

    /// The routes in registration order.
    static let table: [RegisteredRoute] = {
        var routes: [RegisteredRoute] = []
        Routes.register { method, path, _ in
            routes.append(RegisteredRoute(method: method.rawValue, path: path))
        }
        return routes
    }()

    func makeRouter() -> Router<StoreRequestContext> {
        let router = Router(context: StoreRequestContext.self)
        router.add(middleware: ServerMiddleware())
        let routes = self
        Self.register(routes) { method, path, handler in
            // Hummingbird writes parameters as `{name}` too.
            router.on(RouterPath(path), method: method) { request, context in
                try await handler(request, context)
            }
        }
        return router
    }

    /// Registers each route with `add`; `routes` is nil when only the table is wanted.
    private static func register(
        _ routes: Routes? = nil,
        _ add: (HTTPRequest.Method, String, @escaping Handler) -> Void
    ) {
        func h(_ build: @escaping (Routes) -> Handler) -> Handler {
            guard let routes else { return { _, _ in Response(status: .ok) } }
            return build(routes)
        }
        add(.get, "/health", h { r in r.health })
        add(.get, "/metrics", h { r in r.metrics })
        add(.get, "/openapi.yaml", h { r in r.openAPI })
        add(.get, "/v1/config/client", h { r in r.clientConfiguration })
        add(.post, "/v1/auth/token", h { r in r.token })
        add(.post, "/v1/auth/revoke", h { r in r.signed(limit: formLimit, r.revoke) })
        add(.get, "/v1/me", h { r in r.signed(r.me) })
        add(.get, "/v1/stores", h { r in r.signed(r.listStores) })
        add(.get, "/v1/stores/{id}", h { r in r.signed(r.showStore) })
        add(.get, "/v1/reservations", h { r in r.signed(r.searchReservations) })
        add(.post, "/v1/reservations", h { r in r.signed(r.idempotent(r.createReservation)) })
        add(.get, "/v1/reservations/by-code/{code}", h { r in r.signed(r.showReservationByCode) })
        add(.get, "/v1/reservations/{id}", h { r in r.signed(r.showReservation) })
        add(.patch, "/v1/reservations/{id}", h { r in r.signed(r.patchReservation) })
        add(
            .post,
            "/v1/reservations/{id}/check-in",
            h { r in r.signed(r.idempotent(r.transition(to: .checkedIn))) }
        )
        add(
            .post,
            "/v1/reservations/{id}/cancel",
            h { r in r.signed(r.idempotent(r.transition(to: .cancelled))) }
        )
        add(.get, "/v1/customers", h { r in r.signed(r.listCustomers) })
        add(.post, "/v1/customers", h { r in r.signed(r.idempotent(r.createCustomer)) })
        add(.get, "/v1/customers/{id}", h { r in r.signed(r.showCustomer) })
        add(.get, "/v1/products", h { r in r.signed(r.listProducts) })
        add(.get, "/v1/products/{gtin}", h { r in r.signed(r.showProduct) })
        add(.get, "/v1/products/{gtin}/image", h { r in r.signed(r.productImage) })
    }

    // MARK: Wrappers

    /// Collects the body (413 over `limit`), checks token and signature (401), then runs.
    func signed(limit: Int = jsonLimit, _ handler: @escaping SignedHandler) -> Handler {
        { request, context in
            let body = try await Self.collect(request, limit: limit)
            let signedIn = try await self.context.gate.authenticate(request, body: body)
            var context = context
            context.logger[metadataKey: "subject"] = .string(signedIn.subject)
            context.logger[metadataKey: "keyid"] = .string(signedIn.keyID)
            return try await handler(request, body, signedIn, context).response
        }
    }

    static func collect(_ request: Request, limit: Int) async throws(APIError) -> [UInt8] {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.payloadTooLarge(limit: limit)
        }
        do {
            return Array(try await request.body.collect(upTo: limit).readableBytesView)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw APIError.payloadTooLarge(limit: limit)
        } catch {
            throw APIError.badRequest("the request body could not be read")
        }
    }

    /// Honours `Idempotency-Key`: the first request runs, the others get its answer.
    func idempotent(_ handler: @escaping SignedHandler) -> SignedHandler {
        { request, body, signedIn, context in
            guard let key = request.headers[.idempotencyKey] else {
                return try await handler(request, body, signedIn, context)
            }
            try IdempotencyStore.validate(key)
            let fingerprint =
                "\(request.method.rawValue) \(request.uri.path) \(RequestSigner.contentDigest(of: body))"
            let store = self.context.idempotency
            switch try await store.begin(
                subject: signedIn.subject,
                key: key,
                fingerprint: fingerprint
            ) {
            case .replay(let stored):
                var headers: [(HTTPField.Name, String)] = [(.idempotencyReplayed, "true")]
                for (name, value) in stored.headers.sorted(by: { $0.key < $1.key })
                where name != "Content-Type" {
                    if let field = HTTPField.Name(name) { headers.append((field, value)) }
                }
                return Reply.bytes(
                    stored.body,
                    status: HTTPResponse.Status(code: stored.status),
                    contentType: stored.headers["Content-Type"] ?? Reply.jsonType,
                    headers: headers
                )
            case .proceed:
                var answer: Answer
                do {
                    answer = try await handler(request, body, signedIn, context)
                } catch let error as APIError {
                    answer = Answer(error, requestID: context.requestID)
                } catch {
                    try? await store.abandon(subject: signedIn.subject, key: key)
                    throw error
                }
                if answer.status.code >= 500 {
                    try? await store.abandon(subject: signedIn.subject, key: key)
                    return answer
                }
                var headers: [String: String] = [:]
                if let contentType = answer.contentType { headers["Content-Type"] = contentType }
                for (name, value) in answer.headers where name == .eTag || name == .location {
                    headers[name == .eTag ? "ETag" : "Location"] = value
                }
                try await store.complete(
                    subject: signedIn.subject,
                    key: key,
                    response: IdempotencyStore.StoredResponse(
                        status: Int(answer.status.code),
                        headers: headers,
                        body: answer.body
                    )
                )
                return answer
            }
        }
    }

    // MARK: Public routes

    var health: Handler {
        { _, _ in
            let ok = await self.context.database.ping()
            let health = ServerHealth(
                status: ok ? "ok" : "unavailable",
                database: self.context.database.kind.rawValue,
                version: SuiteVersion.current
            )
            return try Reply.json(health, status: ok ? .ok : .serviceUnavailable).response
        }
    }

    var metrics: Handler {
        { _, _ in
            Reply.bytes(
                StoreMetrics.render(),
                contentType: "text/plain; version=0.0.4; charset=utf-8"
            ).response
        }
    }

    var openAPI: Handler {
        { _, _ in
            Reply.bytes(
                OpenAPIDocument.bytes,
                contentType: "application/yaml; charset=utf-8",
                headers: [(.cacheControl, "no-cache")]
            ).response
        }
    }

    var clientConfiguration: Handler {
        { request, _ in
            let query = request.uri.queryParameters
            guard let app = query.get("app"), !app.isEmpty else {
                throw APIError.badRequest(
                    "query parameter 'app' is missing (the client app's name)"
                )
            }
            guard ConfigService.isValidAppName(app) else {
                throw APIError.badRequest(
                    "query parameter 'app' must be 1–64 letters, digits, '.', '_' or '-'"
                )
            }
            guard let versionText = query.get("version"), !versionText.isEmpty else {
                throw APIError.badRequest(
                    "query parameter 'version' is missing (the client's semantic version)"
                )
            }
            guard let version = try? SemanticVersion(parsing: versionText) else {
                throw APIError.badRequest(
                    "query parameter 'version' is not a semantic version: '\(versionText.prefix(40))'"
                )
            }
            var store: Store?
            if let storeText = query.get("store") {
                let id = try Self.uuid(storeText, name: "query parameter 'store'")
                guard let found = try await self.repository.store(id: id) else {
                    throw APIError.notFound("store \(id.uuidString) does not exist")
                }
                store = found
            }
            let snapshot = try await self.context.config.current()
            let configuration = try snapshot.configuration(for: app)
            let response = ClientConfigurationResponse(
                configuration: configuration,
                store: store,
                flags: configuration.flags(for: store.map { FlagTarget(store: $0) } ?? .global),
                updateRequired: configuration.requiresUpdate(clientVersion: version)
            )
            let body = try JSONEncoder.shopfloor.encode(response)
            let etag = "\"\(snapshot.version)-\(Self.shortHash(body))\""
            if let match = request.headers[.ifNoneMatch], Self.etagMatches(match, etag) {
                return Response(
                    status: .notModified,
                    headers: [.eTag: etag, .cacheControl: "no-cache"]
                )
            }
            return Reply.bytes(
                body,
                contentType: Reply.jsonType,
                headers: [(.eTag, etag), (.cacheControl, "no-cache")]
            ).response
        }
    }

    // MARK: Sign-in

    var token: Handler {
        { request, context in
            let body = try await Self.collect(request, limit: Self.formLimit)
            let grant: TokenGrant
            do {
                grant = try TokenGrant.parse(formBody: body)
            } catch {
                throw APIError.auth(
                    ProblemDetails(
                        type: AuthProblemType.invalidRequest,
                        title: "Bad token request",
                        status: 400,
                        detail: (error as? AuthError)?.message
                    )
                )
            }
            let now = Date()
            switch grant {
            case .password(let username, let password):
                return try await self.signIn(
                    username: username,
                    password: password,
                    context: context,
                    now: now
                )
            case .refreshToken(let token):
                let tokens = try await self.context.gate.refresh(token, now: now)
                return Reply.bytes(
                    tokens.jsonData(),
                    contentType: Reply.jsonType,
                    headers: [(.cacheControl, "no-store")]
                ).response
            }
        }
    }

    private func signIn(username: String, password: String, context: StoreRequestContext, now: Date)
        async throws -> Response
    {
        let limiter = self.context.limiter
        if let wait = try await limiter.retryAfter(
            username: username,
            address: context.clientAddress,
            now: now
        ) {
            throw APIError(
                APIProblem(
                    type: ProblemType.rateLimited,
                    title: "Too many failed sign-ins",
                    status: 429,
                    detail:
                        "too many failed sign-ins for this user name or address; retry in \(wait) s"
                ),
                headers: [(.retryAfter, String(wait))]
            )
        }
        let user =
            Associate.isValidUsername(username) ? try await self.context.users.user(username) : nil
        let hasher = self.context.hasher
        let stored = user?.passwordHash
        // Unknown users cost the same hash as known ones, so timing does not tell them apart.
        let matches = try await NIOThreadPool.singleton.runIfActive {
            (try? hasher.verifyOrDummy(password, against: stored)) ?? false
        }
        guard let user, matches else {
            try await limiter.recordFailure(
                username: username,
                address: context.clientAddress,
                now: now
            )
            context.logger.notice(
                "sign-in refused",
                metadata: ["username": .string(String(username.prefix(64)))]
            )
            throw APIError.auth(
                ProblemDetails(
                    type: AuthProblemType.invalidCredentials,
                    title: "Wrong user name or password",
                    status: 401,
                    detail: "The user name or password is wrong."
                )
            )
        }
        try await limiter.clear(username: username)
        if hasher.needsRehash(user.passwordHash) {
            let rehashed = try await NIOThreadPool.singleton.runIfActive {
                try hasher.hash(password)
            }
            _ = try await self.context.users.setPasswordHash(
                user.associate.username,
                rehashed,
                now: now
            )
        }
        let tokens = try await self.context.gate.issue(subject: user.associate.username, now: now)
        return Reply.bytes(
            tokens.jsonData(),
            contentType: Reply.jsonType,
            headers: [(.cacheControl, "no-store")]
        ).response
    }

    var revoke: SignedHandler {
        { _, body, signedIn, _ in
            let fields = FormEncoding.decode(body)
            guard let token = fields["token"], !token.isEmpty else {
                throw APIError.auth(
                    ProblemDetails(
                        type: AuthProblemType.invalidRequest,
                        title: "Bad revocation request",
                        status: 400,
                        detail: "form field 'token' is missing"
                    )
                )
            }
            try await self.context.gate.revoke(token: token, subject: signedIn.subject)
            return try Reply.json([String: String]())
        }
    }

    var me: SignedHandler {
        { _, _, signedIn, _ in
            guard let user = try await self.context.users.user(signedIn.subject) else {
                throw APIError.notFound("user \(signedIn.subject) no longer exists")
            }
            return try Reply.json(user.associate)
        }
    }

    // MARK: Stores

    var listStores: SignedHandler {
        { request, _, _, _ in
            let query = request.uri.queryParameters
            let page = try PageRequest(
                limit: query.get("limit"),
                cursor: query.get("cursor"),
                cursorValues: 2
            )
            return try Reply.json(try await self.repository.stores(page))
        }
    }

    var showStore: SignedHandler {
        { _, _, _, context in
            let id = try Self.uuid(context.parameters.get("id") ?? "", name: "path parameter 'id'")
            guard let store = try await self.repository.store(id: id) else {
                throw APIError.notFound("store \(id.uuidString) does not exist")
            }
            return try Reply.json(store)
        }
    }

    // MARK: Reservations

    var searchReservations: SignedHandler {
        { request, _, _, _ in
            let query = request.uri.queryParameters
            let page = try PageRequest(
                limit: query.get("limit"),
                cursor: query.get("cursor"),
                cursorValues: 2
            )
            var filter = Repository.ReservationFilter()
            if let text = query.get("query") {
                guard text.count <= 200 else {
                    throw APIError.badRequest(
                        "query parameter 'query' is longer than 200 characters"
                    )
                }
                filter.text = text.trimmingCharacters(in: .whitespaces)
            }
            if let date = query.get("date") {
                guard date.utf8.count == 10, (try? RFC3339.date(from: date + "T00:00:00Z")) != nil
                else {
                    throw APIError.badRequest(
                        "query parameter 'date' must be a calendar day YYYY-MM-DD, got '\(date.prefix(20))'"
                    )
                }
                filter.date = date
            }
            for value in query.getAll("status").flatMap({ $0.split(separator: ",") }) {
                let name = value.trimmingCharacters(in: .whitespaces)
                guard let status = Reservation.Status(rawValue: name) else {
                    throw APIError.badRequest(
                        "query parameter 'status' has '\(name.prefix(30))'; use \(Reservation.Status.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                if !filter.statuses.contains(status) { filter.statuses.append(status) }
            }
            if let store = query.get("store") {
                filter.storeID = try Self.uuid(store, name: "query parameter 'store'")
            }
            return try Reply.json(try await self.repository.reservations(filter, page))
        }
    }

    var showReservation: SignedHandler {
        { _, _, _, context in
            let id = try Self.uuid(context.parameters.get("id") ?? "", name: "path parameter 'id'")
            guard let detail = try await self.repository.reservation(id: id) else {
                throw APIError.notFound("reservation \(id.uuidString) does not exist")
            }
            return try Reply.json(detail, headers: [(.eTag, "\"\(detail.reservation.version)\"")])
        }
    }

    var showReservationByCode: SignedHandler {
        { _, _, _, context in
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
            guard let detail = try await self.repository.reservation(code: code) else {
                throw APIError.notFound("no reservation has confirmation code \(code)")
            }
            return try Reply.json(detail, headers: [(.eTag, "\"\(detail.reservation.version)\"")])
        }
    }

    var createReservation: SignedHandler {
        { _, body, signedIn, context in
            let new: NewReservation = try Self.decode(NewReservation.self, body)
            guard let store = try await self.repository.store(id: new.storeID) else {
                throw APIError.validation([
                    APIProblem.FieldError(
                        field: "storeID",
                        code: "unknownValue",
                        message: "store \(new.storeID.uuidString) does not exist"
                    )
                ])
            }
            let snapshot = try await self.context.config.current()
            guard snapshot.isEnabled(KnownFlag.newReservationsEnabled, for: store) else {
                throw APIError.featureDisabled(KnownFlag.newReservationsEnabled, store: store)
            }
            try Self.checkPartySize(new.partySize, snapshot: snapshot, store: store)
            let now = Date()
            let customer: Customer
            var formValues: [String: String] = [:]
            var isNewCustomer = false
            if let customerID = new.customerID {
                guard let found = try await self.repository.customer(id: customerID) else {
                    throw APIError.validation([
                        APIProblem.FieldError(
                            field: "customerID",
                            code: "unknownValue",
                            message: "customer \(customerID.uuidString) does not exist"
                        )
                    ])
                }
                customer = found
            } else {
                (customer, formValues) = try Self.customer(
                    from: new.customer ?? [:],
                    snapshot: snapshot,
                    store: store,
                    now: now,
                    prefix: "customer."
                )
                isNewCustomer = true
            }
            let database = self.context.database
            let insertCustomer = isNewCustomer
            for _ in 0..<5 {
                let reservation = try Reservation(
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
                do {
                    try await database.transaction { [customer, formValues] sql in
                        if insertCustomer {
                            try await Repository.insert(customer, formValues: formValues, on: sql)
                        }
                        try await Repository.insert(reservation, store: store, now: now, on: sql)
                    }
                } catch {
                    // A confirmation code collision (1 in 34 billion): draw another.
                    if try await self.repository.reservation(code: reservation.confirmationCode)
                        != nil
                    {
                        continue
                    }
                    throw error
                }
                context.logger.info(
                    "reservation created",
                    metadata: [
                        "reservation": .string(reservation.id.uuidString),
                        "by": .string(signedIn.subject),
                    ]
                )
                let detail = try ReservationDetail(
                    reservation: reservation,
                    customer: customer,
                    store: store
                )
                return try Reply.json(
                    detail,
                    status: .created,
                    headers: [
                        (.location, "/v1/reservations/\(reservation.id.uuidString)"),
                        (.eTag, "\"\(reservation.version)\""),
                    ]
                )
            }
            throw APIError.unavailable("could not draw a free confirmation code; retry")
        }
    }

    func transition(to target: Reservation.Status) -> SignedHandler {
        { _, _, signedIn, context in
            let id = try Self.uuid(context.parameters.get("id") ?? "", name: "path parameter 'id'")
            let flag =
                target == .checkedIn ? KnownFlag.checkInEnabled : KnownFlag.cancellationEnabled
            for _ in 0..<20 {
                guard let detail = try await self.repository.reservation(id: id) else {
                    throw APIError.notFound("reservation \(id.uuidString) does not exist")
                }
                let snapshot = try await self.context.config.current()
                guard snapshot.isEnabled(flag, for: detail.store) else {
                    throw APIError.featureDisabled(flag, store: detail.store)
                }
                var reservation = detail.reservation
                do {
                    try reservation.transition(to: target)
                } catch let error as Reservation.Status.TransitionError {
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
                if try await self.repository.update(
                    reservation,
                    store: detail.store,
                    expectedVersion: detail.reservation.version,
                    now: Date()
                ) {
                    context.logger.info(
                        "reservation status changed",
                        metadata: [
                            "reservation": .string(id.uuidString),
                            "status": .string(target.rawValue), "by": .string(signedIn.subject),
                        ]
                    )
                    let updated = try ReservationDetail(
                        reservation: reservation,
                        customer: detail.customer,
                        store: detail.store
                    )
                    return try Reply.json(updated, headers: [(.eTag, "\"\(reservation.version)\"")])
                }
            }
            throw APIError.unavailable("reservation \(id.uuidString) kept changing; retry")
        }
    }

    var patchReservation: SignedHandler {
        { request, body, _, context in
            let id = try Self.uuid(context.parameters.get("id") ?? "", name: "path parameter 'id'")
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
            guard let expected = Self.version(fromETag: ifMatch) else {
                throw APIError.badRequest(
                    "header 'If-Match' must be a reservation ETag such as \"3\", got '\(ifMatch.prefix(40))'"
                )
            }
            let changes: ReservationChanges = try Self.decode(ReservationChanges.self, body)
            guard let detail = try await self.repository.reservation(id: id) else {
                throw APIError.notFound("reservation \(id.uuidString) does not exist")
            }
            func mismatch(_ current: Int) -> APIError {
                APIError(
                    APIProblem(
                        type: ProblemType.versionMismatch,
                        title: "Version mismatch",
                        status: 412,
                        detail:
                            "reservation \(id.uuidString) is at version \(current), not \(expected)",
                        currentVersion: current
                    ),
                    headers: [(.eTag, "\"\(current)\"")]
                )
            }
            guard detail.reservation.version == expected else {
                throw mismatch(detail.reservation.version)
            }
            var updated = detail.reservation
            if let startsAt = changes.startsAt { updated.startsAt = startsAt }
            if let endsAt = changes.endsAt { updated.endsAt = endsAt }
            if let partySize = changes.partySize { updated.partySize = partySize }
            if let topic = changes.topic { updated.topic = topic }
            if let notes = changes.notes { updated.notes = notes.isEmpty ? nil : notes }
            updated.version += 1
            do { try updated.validate() } catch let error as ValidationError {
                throw APIError.validation(error)
            }
            if changes.partySize != nil {
                try Self.checkPartySize(
                    updated.partySize,
                    snapshot: try await self.context.config.current(),
                    store: detail.store
                )
            }
            guard
                try await self.repository.update(
                    updated,
                    store: detail.store,
                    expectedVersion: expected,
                    now: Date()
                )
            else {
                let current = try await self.repository.reservation(id: id)
                guard let current else {
                    throw APIError.notFound("reservation \(id.uuidString) does not exist")
                }
                throw mismatch(current.reservation.version)
            }
            let result = try ReservationDetail(
                reservation: updated,
                customer: detail.customer,
                store: detail.store
            )
            return try Reply.json(result, headers: [(.eTag, "\"\(updated.version)\"")])
        }
    }

    // MARK: Customers

    var listCustomers: SignedHandler {
        { request, _, _, _ in
            let query = request.uri.queryParameters
            let page = try PageRequest(
                limit: query.get("limit"),
                cursor: query.get("cursor"),
                cursorValues: 3
            )
            let text = query.get("query")?.trimmingCharacters(in: .whitespaces)
            if let text, text.count > 200 {
                throw APIError.badRequest("query parameter 'query' is longer than 200 characters")
            }
            return try Reply.json(try await self.repository.customers(query: text, page))
        }
    }

    var showCustomer: SignedHandler {
        { _, _, _, context in
            let id = try Self.uuid(context.parameters.get("id") ?? "", name: "path parameter 'id'")
            guard let customer = try await self.repository.customer(id: id) else {
                throw APIError.notFound("customer \(id.uuidString) does not exist")
            }
            return try Reply.json(customer)
        }
    }

    var createCustomer: SignedHandler {
        { _, body, _, _ in
            let new: NewCustomer = try Self.decode(NewCustomer.self, body)
            var store: Store?
            if let storeID = new.storeID {
                guard let found = try await self.repository.store(id: storeID) else {
                    throw APIError.validation([
                        APIProblem.FieldError(
                            field: "storeID",
                            code: "unknownValue",
                            message: "store \(storeID.uuidString) does not exist"
                        )
                    ])
                }
                store = found
            }
            let snapshot = try await self.context.config.current()
            let (customer, values) = try Self.customer(
                from: new.fields,
                snapshot: snapshot,
                store: store,
                now: Date(),
                prefix: "fields."
            )
            try await Repository.insert(customer, formValues: values, on: self.context.database.sql)
            return try Reply.json(
                customer,
                status: .created,
                headers: [(.location, "/v1/customers/\(customer.id.uuidString)")]
            )
        }
    }

    // MARK: Products

    var listProducts: SignedHandler {
        { request, _, _, _ in
            let query = request.uri.queryParameters
            let page = try PageRequest(
                limit: query.get("limit"),
                cursor: query.get("cursor"),
                cursorValues: 1
            )
            let text = query.get("query")?.trimmingCharacters(in: .whitespaces)
            if let text, text.count > 200 {
                throw APIError.badRequest("query parameter 'query' is longer than 200 characters")
            }
            return try Reply.json(try await self.repository.products(query: text, page))
        }
    }

    var showProduct: SignedHandler {
        { _, _, _, context in
            let gtin = try Self.gtin(context.parameters.get("gtin") ?? "")
            guard let product = try await self.repository.product(gtin: gtin) else {
                throw APIError.notFound("no product has GTIN \(gtin.gtin14)")
            }
            return try Reply.json(product)
        }
    }

    var productImage: SignedHandler {
        { request, _, _, context in
            let gtin = try Self.gtin(context.parameters.get("gtin") ?? "")
            guard let image = try await self.repository.productImage(gtin: gtin) else {
                throw APIError.notFound("product \(gtin.gtin14) has no image")
            }
            let etag = "\"\(image.etag)\""
            let headers: [(HTTPField.Name, String)] = [
                (.eTag, etag), (.lastModified, HTTPDate.format(image.updatedAt)),
                (.cacheControl, "private, max-age=300"),
            ]
            if let match = request.headers[.ifNoneMatch], Self.etagMatches(match, etag) {
                return Answer(status: .notModified, headers: headers)
            }
            return Reply.bytes(image.png, contentType: "image/png", headers: headers)
        }
    }

    // MARK: Helpers

    static func uuid(_ text: String, name: String) throws(APIError) -> UUID {
        guard let id = UUID(uuidString: text) else {
            throw APIError.badRequest("\(name) is not a UUID: '\(text.prefix(40))'")
        }
        return id
    }

    static func gtin(_ text: String) throws(APIError) -> GTIN {
        do {
            return try GTIN(text)
        } catch {
            throw APIError.badRequest("path parameter 'gtin' is not a GTIN: \(error.reason)")
        }
    }

    /// `"3"`, `W/"3"` or `3` → 3.
    static func version(fromETag text: String) -> Int? {
        var value = text.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("W/") { value.removeFirst(2) }
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
            value = String(value.dropFirst().dropLast())
        }
        guard let version = Int(value), ModelLimits.version.contains(version) else { return nil }
        return version
    }

    static func etagMatches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains {
            let candidate = $0.trimmingCharacters(in: .whitespaces)
            return candidate == "*" || candidate == etag || candidate == "W/" + etag
        }
    }

    /// The first 16 hex digits of the body's SHA-256.
    static func shortHash(_ body: Data) -> String {
        let digest = RequestSigner.contentDigest(of: body)  // sha-256=:<base64>:
        let base64 = digest.dropFirst("sha-256=:".count).dropLast()
        let bytes = Data(base64Encoded: String(base64)) ?? Data()
        return bytes.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    static func checkPartySize(_ size: Int, snapshot: ConfigSnapshot, store: Store) throws(APIError)
    {
        if let max = snapshot.number(KnownFlag.maxPartySize, for: store), Double(size) > max {
            throw APIError.validation([
                APIProblem.FieldError(
                    field: "partySize",
                    code: "outOfRange",
                    message: "partySize \(size) is above this store's maximum of \(Int(max))"
                )
            ])
        }
    }

    /// A new customer from form values checked against the configured form.
    static func customer(
        from values: [String: String],
        snapshot: ConfigSnapshot,
        store: Store?,
        now: Date,
        prefix: String
    ) throws(APIError) -> (Customer, [String: String]) {
        let configuration: ClientConfiguration
        do {
            configuration = try snapshot.configuration(for: "*")
        } catch {
            throw APIError.unavailable("the stored customer form is invalid: \(error)")
        }
        let callingCode = store.flatMap { PhoneNumber.callingCode(forRegion: $0.market) }
        let validation = configuration.validate(form: values, defaultCallingCode: callingCode)
        guard validation.isValid else {
            throw APIError.validation(
                validation.errors.map {
                    APIProblem.FieldError(
                        field: prefix + $0.field,
                        code: $0.code.rawValue,
                        message: $0.message
                    )
                }
            )
        }
        let cleaned = validation.values
        do {
            let customer = try Customer(
                givenName: cleaned["givenName"] ?? "",
                familyName: cleaned["familyName"] ?? "",
                email: try cleaned["email"].map { try EmailAddress($0) },
                phone: try cleaned["phone"].map {
                    try PhoneNumber($0, defaultCallingCode: callingCode)
                },
                note: cleaned["note"],
                createdAt: now
            )
            return (customer, cleaned)
        } catch {
            var field =
                ValidationError(error).map { APIProblem.FieldError($0) }
                ?? APIProblem.FieldError(field: "", code: "invalidFormat", message: "\(error)")
            field.field = prefix + field.field
            throw APIError.validation([field])
        }
    }

    /// Decodes a JSON body: 400 when it is not JSON, 422 naming the field otherwise.
    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws(APIError) -> T {
        guard !body.isEmpty else {
            throw APIError.badRequest("the request body is empty; send a JSON object")
        }
        do {
            return try JSONDecoder.shopfloor.decode(T.self, from: Data(body))
        } catch {
            if let validation = ValidationError(error) { throw APIError.validation(validation) }
            func path(_ keys: [any CodingKey]) -> String {
                keys.map(\.fieldComponent).joined(separator: ".")
            }
            switch error as? DecodingError {
            case .keyNotFound(let key, let context)?:
                let field = path(context.codingPath + [key])
                throw APIError.validation([
                    APIProblem.FieldError(
                        field: field,
                        code: "missing",
                        message: "\(field) is missing"
                    )
                ])
            case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
                let field = path(context.codingPath)
                throw APIError.validation([
                    APIProblem.FieldError(
                        field: field,
                        code: "invalidFormat",
                        message: "\(field) has the wrong type"
                    )
                ])
            case .dataCorrupted(let context)? where !context.codingPath.isEmpty:
                let field = path(context.codingPath)
                throw APIError.validation([
                    APIProblem.FieldError(
                        field: field,
                        code: "invalidFormat",
                        message: "\(field) is not valid"
                    )
                ])
            default:
                throw APIError.badRequest("the request body is not valid JSON")
            }
        }
    }
}

extension CodingKey {
    fileprivate var fieldComponent: String { intValue.map(String.init) ?? stringValue }
}

/// Auth's hasher at `iterations`; below Auth's floor (100,000) only for tests and benchmarks.
func makePasswordHasher(iterations: Int) -> PasswordHasher {
    iterations >= PasswordHasher.minimumIterations
        ? PasswordHasher(iterations: iterations)
        : PasswordHasher.insecureForTesting(iterations: iterations)
}

/// Every route the server registers, for documentation checks.
public enum StoreServerRoutes {
    /// `GET /health`, `POST /v1/reservations`, … in registration order.
    public static var all: [RegisteredRoute] { Routes.table }
    /// The routes that need no signed request.
    public static let publicRoutes: Set<String> = [
        "GET /health", "GET /metrics", "GET /openapi.yaml", "GET /v1/config/client",
        "POST /v1/auth/token",
    ]
}
