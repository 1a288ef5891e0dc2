import Auth
import Foundation
import Models
import StoreServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 24, points 1, 2 and 5: every associate sees their own stores, and nothing of another
/// store is revealed or changed through any route.
@Suite("stores and roles scope every query", .serialized)
struct ScopeTests {
    /// The routes of the OpenAPI document the server serves, `METHOD /path`.
    static func documentedRoutes(_ server: TestServer) async throws -> [String] {
        let spec = try await PlainHTTP.send(
            "GET",
            server.url.appendingPathComponent("openapi.yaml")
        )
        var routes: [String] = []
        var path: String?
        for line in spec.text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if !line.hasPrefix(" "), !line.isEmpty {
                path = nil
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                line.hasSuffix(":")
            {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast().uppercased()
                if ["GET", "POST", "PATCH", "PUT", "DELETE"].contains(method) {
                    routes.append("\(method) \(path)")
                }
            }
        }
        return routes
    }

    /// A new Berlin customer with a reservation in Berlin (and nowhere else).
    static func berlinOnlyCustomer(_ admin: SignedClient) async throws -> Customer {
        let (start, end) = openSlot(berlin, days: 5)
        let booked = try await admin.send(
            "POST",
            "/v1/reservations",
            json:
                #"{"storeID": "\#(berlin.uuidString)", "startsAt": "\#(start)", "endsAt": "\#(end)", "partySize": 1, "topic": "Fitting", "customer": {"givenName": "Berta", "familyName": "Spreeufer", "email": "berta.spreeufer@example.org"}}"#
        )
        return try booked.decode(ReservationDetail.self).customer
    }

    @Test(
        "an associate of Perth walks every route of the OpenAPI document and finds nothing of Berlin",
        arguments: DatabaseKind.allCases
    )
    func walkEveryRoute(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, admin in
            let setup = try await StoreAdmin.open(
                server.location,
                passwordIterations: testPasswordCost,
                logger: TestDatabases.logger
            )
            _ = try await setup.addUser(
                "perth-only",
                password: "perth secret",
                role: .associate,
                stores: ["perth-hay-street"]
            )
            await setup.close()
            let other = try await server.client(username: "perth-only", password: "perth secret")
            let target = try await firstReservation(admin, store: berlin)
            let customer = try await Self.berlinOnlyCustomer(admin)
            let before: Page<ReservationDetail> = try await admin.send(
                "GET",
                "/v1/reservations?store=\(berlin.uuidString)&limit=200"
            ).decode()
            let start = RFC3339.string(from: Date().addingTimeInterval(86_400 * 2).rounded())
            let end = RFC3339.string(from: Date().addingTimeInterval(86_400 * 2 + 1800).rounded())
            let routes = try await Self.documentedRoutes(server)
            #expect(Set(routes) == Set(server.routes.map(\.description)))
            var walked: [String: [Int]] = [:]
            func check(_ route: String, _ reply: HTTPReply, _ allowed: Set<Int>) {
                walked[route, default: []].append(reply.status)
                #expect(
                    allowed.contains(reply.status),
                    "\(route): \(reply.status) \(reply.text.prefix(300))"
                )
                for secret in [
                    target.id.uuidString, target.reservation.confirmationCode.compact,
                    customer.id.uuidString, customer.email!.value,
                    "Berlin Kurf", "berlin-kurfuerstendamm",
                ] where reply.status < 300 {
                    #expect(!reply.text.contains(secret), "\(route) reveals \(secret)")
                }
            }
            for route in routes {
                let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
                let (method, template) = (parts[0], parts[1])
                let path = template.replacingOccurrences(of: "{id}", with: target.id.uuidString)
                    .replacingOccurrences(
                        of: "{code}",
                        with: target.reservation.confirmationCode.compact
                    )
                    .replacingOccurrences(of: "{gtin}", with: "4006381333931")
                switch route {
                case "GET /health", "GET /metrics", "GET /openapi.yaml", "POST /v1/auth/token",
                    "GET /v1/config/client", "GET /v1/me", "GET /v1/products",
                    "GET /v1/products/{gtin}",
                    "GET /v1/products/{gtin}/image":
                    // Public, the caller's own, or the shared catalog: no store's data.
                    walked[route] = []
                case "POST /v1/auth/revoke":
                    // Another user's token is ignored like an unknown one.
                    check(
                        route,
                        try await other.send(
                            "POST",
                            path,
                            body: Data("token=abc".utf8),
                            headers: ["Content-Type": "application/x-www-form-urlencoded"]
                        ),
                        [200]
                    )
                case "GET /v1/stores":
                    let stores = try await other.send("GET", path)
                    check(route, stores, [200])
                    #expect(try stores.decode(Page<Store>.self).items.map(\.id) == [perth])
                case "GET /v1/stores/{id}":
                    check(
                        route,
                        try await other.send("GET", "/v1/stores/\(berlin.uuidString)"),
                        [404]
                    )
                    check(
                        route,
                        try await other.send("GET", "/v1/stores/berlin-kurfuerstendamm"),
                        [404]
                    )
                case "GET /v1/reservations":
                    for query in [
                        "", "?store=\(berlin.uuidString)", "?store=berlin-kurfuerstendamm",
                        "?query=\(customer.email!.value)",
                        "?query=\(target.reservation.confirmationCode.compact)",
                        "?allStores=true", "?limit=200",
                    ] {
                        let reply = try await other.send("GET", path + query)
                        check(route, reply, [200, 403, 404])
                        if reply.status == 200 {
                            let page: Page<ReservationDetail> = try reply.decode()
                            #expect(page.items.allSatisfy { $0.store.id == perth }, "\(query)")
                        }
                    }
                case "POST /v1/reservations":
                    for body in [
                        #"{"storeID": "\#(berlin.uuidString)", "startsAt": "\#(start)", "endsAt": "\#(end)", "partySize": 2, "topic": "Intrusion", "customer": {"givenName": "Eve", "familyName": "Intruder"}}"#,
                        #"{"storeID": "\#(perth.uuidString)", "startsAt": "\#(start)", "endsAt": "\#(end)", "partySize": 2, "topic": "Intrusion", "customerID": "\#(customer.id.uuidString)"}"#,
                    ] {
                        check(route, try await other.send("POST", path, json: body), [404, 422])
                    }
                case "PATCH /v1/reservations/{id}":
                    check(
                        route,
                        try await other.send(
                            "PATCH",
                            path,
                            json: #"{"notes": "mine now"}"#,
                            headers: ["If-Match": "\"\(target.reservation.version)\""]
                        ),
                        [404]
                    )
                case "GET /v1/customers":
                    for query in [
                        "?store=\(berlin.uuidString)", "?query=\(customer.email!.value)",
                        "?query=\(customer.familyName)", "?query=example.com&limit=200",
                    ] {
                        let reply = try await other.send("GET", path + query)
                        check(route, reply, [200, 404])
                        if reply.status == 200 {
                            #expect(
                                !(try reply.decode(Page<Customer>.self).items.contains {
                                    $0.id == customer.id
                                })
                            )
                        }
                    }
                case "POST /v1/customers":
                    check(
                        route,
                        try await other.send(
                            "POST",
                            path,
                            json:
                                #"{"storeID": "\#(berlin.uuidString)", "fields": {"givenName": "Eve", "familyName": "Intruder"}}"#
                        ),
                        [422]
                    )
                case "GET /v1/customers/{id}":
                    check(
                        route,
                        try await other.send("GET", "/v1/customers/\(customer.id.uuidString)"),
                        [404]
                    )
                default:
                    // Reservation by id or code, check-in, cancel: with and without a key.
                    check(route, try await other.send(method, path), [404])
                    if method == "POST" {
                        check(
                            route,
                            try await other.send(
                                method,
                                path,
                                headers: ["Idempotency-Key": "walk-\(route.hashValue)"]
                            ),
                            [404]
                        )
                    }
                }
            }
            #expect(Set(walked.keys) == Set(routes), "every documented route was walked")
            // Nothing of Berlin changed.
            let after: Page<ReservationDetail> = try await admin.send(
                "GET",
                "/v1/reservations?store=\(berlin.uuidString)&limit=200"
            ).decode()
            // By id: the list is upcoming-first by the server's clock, so a reservation that
            // ends while the walk runs (minutes on a busy machine) moves to the past part.
            func byID(_ page: Page<ReservationDetail>) -> [ReservationDetail] {
                page.items.sorted { $0.reservation.id.uuidString < $1.reservation.id.uuidString }
            }
            #expect(byID(after) == byID(before))
            #expect(after.nextCursor == nil && before.nextCursor == nil)
            let intruders: Page<Customer> = try await admin.send(
                "GET",
                "/v1/customers?query=Intruder"
            ).decode()
            #expect(intruders.items.isEmpty)
        }
    }

    @Test(
        "roles and stores are read on every request: an idempotent replay after losing the store is a 404",
        arguments: DatabaseKind.allCases
    )
    func accessChangesAtOnce(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, admin in
            let demo = try await server.client(username: DemoData.username)
            let me: Associate = try await demo.send("GET", "/v1/me").decode()
            #expect(me.role == .associate && me.homeStoreID == berlin && me.storeIDs == [berlin])
            let stores: Page<Store> = try await demo.send("GET", "/v1/stores").decode()
            #expect(stores.items.map(\.shortName) == ["berlin-kurfuerstendamm"])
            let byShortName: Page<ReservationDetail> = try await demo.send(
                "GET",
                "/v1/reservations?store=berlin-kurfuerstendamm&limit=5"
            ).decode()
            #expect(
                !byShortName.items.isEmpty && byShortName.items.allSatisfy { $0.store.id == berlin }
            )
            let everything = try await demo.send("GET", "/v1/reservations?allStores=true")
            #expect(everything.status == 403)
            #expect(try everything.problem().type == ProblemType.forbidden)
            let all: Page<Store> = try await admin.send("GET", "/v1/stores").decode()
            #expect(all.items.count == 6 && all.items.allSatisfy { $0.shortName != nil })
            #expect(try await admin.send("GET", "/v1/reservations?allStores=true").status == 200)

            let target = try await firstReservation(demo, store: berlin)
            let path = "/v1/reservations/\(target.id.uuidString)/check-in"
            let first = try await demo.send(
                "POST",
                path,
                headers: ["Idempotency-Key": "moved-away"]
            )
            #expect(first.status == 200)
            let setup = try await StoreAdmin.open(
                server.location,
                passwordIterations: testPasswordCost,
                logger: TestDatabases.logger
            )
            let moved = try await setup.setAccess(
                DemoData.username,
                role: .associate,
                stores: ["perth-hay-street"]
            )
            await setup.close()
            #expect(moved.storeIDs == [perth])
            let replay = try await demo.send(
                "POST",
                path,
                headers: ["Idempotency-Key": "moved-away"]
            )
            #expect(replay.status == 404, "\(replay.text)")
            #expect(
                try await demo.send("GET", "/v1/reservations/\(target.id.uuidString)").status == 404
            )
            let now: Associate = try await demo.send("GET", "/v1/me").decode()
            #expect(now.storeIDs == [perth] && now.homeStoreID == perth)
        }
    }

    @Test(
        "a customer belongs to the store it was created for and to the stores of its reservations",
        arguments: DatabaseKind.allCases
    )
    func customersBelongToStores(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, admin in
            let demo = try await server.client(username: DemoData.username)
            let created = try await demo.send(
                "POST",
                "/v1/customers",
                json: #"{"fields": {"givenName": "Home", "familyName": "Storeless"}}"#
            )
            #expect(created.status == 201, "\(created.text)")
            let customer: Customer = try created.decode()
            // Created without a store by a Berlin associate: a Berlin customer.
            #expect(
                try await demo.send("GET", "/v1/customers/\(customer.id.uuidString)").status == 200
            )
            let manager = try await server.client(username: DemoData.managerUsername)
            #expect(
                try await manager.send("GET", "/v1/customers/\(customer.id.uuidString)").status
                    == 404
            )
            // A reservation in New York makes the customer New York's too.
            let (start, end) = openSlot(newYork, days: 4)
            let booked = try await admin.send(
                "POST",
                "/v1/reservations",
                json:
                    #"{"storeID": "\#(newYork.uuidString)", "startsAt": "\#(start)", "endsAt": "\#(end)", "partySize": 1, "topic": "Visit", "customerID": "\#(customer.id.uuidString)"}"#
            )
            #expect(booked.status == 201, "\(booked.text)")
            #expect(
                try await manager.send("GET", "/v1/customers/\(customer.id.uuidString)").status
                    == 200
            )
        }
    }
}
