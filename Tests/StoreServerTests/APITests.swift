import Auth
import Foundation
import Models
import StoreServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let newYork = DemoData.storeIDs[0]
let chicago = DemoData.storeIDs[1]  // newReservationsEnabled off
let sanFrancisco = DemoData.storeIDs[2]  // region US-CA: maxPartySize 10
let berlin = DemoData.storeIDs[3]  // maxPartySize 4
let sydney = DemoData.storeIDs[4]  // cancellationEnabled off
let perth = DemoData.storeIDs[5]  // checkInEnabled off

/// Runs `body` with a fresh server on a fresh demo database of `kind` and a signed-in client.
func withServer(
    _ kind: DatabaseKind,
    accessTokenTTL: TimeInterval = 900,
    now: Date? = nil,
    _ body: (TestServer, SignedClient) async throws -> Void
) async throws {
    let server = try await TestServer.start(kind, accessTokenTTL: accessTokenTTL, now: now)
    do {
        let client = try await server.client()
        try await body(server, client)
        try? FileManager.default.removeItem(at: client.directory)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

func firstReservation(
    _ client: SignedClient,
    store: UUID,
    status: Reservation.Status = .confirmed
) async throws -> ReservationDetail {
    let page: Page<ReservationDetail> = try await client.send(
        "GET",
        "/v1/reservations?store=\(store.uuidString)&status=\(status.rawValue)&limit=1"
    ).decode()
    return try #require(page.items.first, "no \(status) reservation in the demo data of \(store)")
}

@Suite("store-server API over HTTP on a real database", .serialized)
struct APITests {
    @Test(
        "health names the database; public routes need no signature, the others answer 401",
        arguments: DatabaseKind.allCases
    )
    func publicAndSigned(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, _ in
            let health: ServerHealth = try await PlainHTTP.send(
                "GET",
                server.url.appendingPathComponent("health")
            ).decode()
            #expect(health == ServerHealth(status: "ok", database: kind.rawValue, version: "0.1.0"))
            #expect(server.routes.count == 22)
            for route in server.routes where !route.isPublic {
                let path = route.path.replacingOccurrences(of: "{id}", with: newYork.uuidString)
                    .replacingOccurrences(of: "{code}", with: "0000-0000")
                    .replacingOccurrences(of: "{gtin}", with: "4006381333931")
                let reply = try await PlainHTTP.send(
                    route.method,
                    URL(string: server.url.absoluteString + path)!,
                    body: route.method == "GET" ? nil : Data("{}".utf8)
                )
                #expect(reply.status == 401, "\(route) without a signature")
                #expect(try reply.problem().type.hasPrefix(AuthProblemType.base), "\(route)")
                #expect(reply.header("x-request-id") != nil)
            }
            let echoed = try await PlainHTTP.send(
                "GET",
                server.url.appendingPathComponent("health"),
                headers: ["X-Request-ID": "trace-42"]
            )
            #expect(echoed.header("x-request-id") == "trace-42")
            #expect(echoed.header("date") != nil)
            let unknown = try await PlainHTTP.send(
                "GET",
                server.url.appendingPathComponent("v2/nothing")
            )
            #expect(unknown.status == 404)
            #expect(try unknown.problem().type == ProblemType.notFound)
        }
    }

    @Test(
        "sign-in refuses bad grants, wrong passwords and, after five failures, rate-limits with Retry-After",
        arguments: DatabaseKind.allCases
    )
    func signIn(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, client in
            let token = server.url.appendingPathComponent("v1/auth/token")
            let missing = try await PlainHTTP.form(
                token,
                [("grant_type", "password"), ("username", "demo")]
            )
            #expect(missing.status == 400)
            #expect(try missing.problem().type == AuthProblemType.invalidRequest)
            let unknownGrant = try await PlainHTTP.form(
                token,
                [("grant_type", "client_credentials")]
            )
            #expect(unknownGrant.status == 400)
            let huge = try await PlainHTTP.form(
                token,
                [
                    ("grant_type", "password"), ("username", "demo"),
                    ("password", String(repeating: "x", count: 5000)),
                ]
            )
            #expect(huge.status == 413)
            #expect(try huge.problem().type == ProblemType.payloadTooLarge)
            let badRefresh = try await PlainHTTP.form(
                token,
                [("grant_type", "refresh_token"), ("refresh_token", "nope")]
            )
            #expect(badRefresh.status == 400)
            #expect(try badRefresh.problem().type == AuthProblemType.invalidGrant)
            for attempt in 1...5 {
                let wrong = try await PlainHTTP.form(
                    token,
                    [
                        ("grant_type", "password"), ("username", "demo"),
                        ("password", "wrong \(attempt)"),
                    ]
                )
                #expect(wrong.status == 401)
                #expect(try wrong.problem().type == AuthProblemType.invalidCredentials)
            }
            let limited = try await PlainHTTP.form(
                token,
                [("grant_type", "password"), ("username", "demo"), ("password", DemoData.password)]
            )
            #expect(limited.status == 429)
            #expect(try limited.problem().type == ProblemType.rateLimited)
            let wait = try #require(limited.header("retry-after").flatMap(Int.init))
            #expect(wait > 0 && wait <= 900)
            // Another user is not affected.
            let other = try await PlainHTTP.form(
                token,
                [("grant_type", "password"), ("username", "nobody"), ("password", "x")]
            )
            #expect(other.status == 401)
            // The signed-in session still works; /v1/me names the administrator.
            let me: Associate = try await client.send("GET", "/v1/me").decode()
            #expect(me.username == DemoData.adminUsername && me.role == .admin)
        }
    }

    @Test(
        "revoking ends the session: the next request is 401 and the client must sign in again",
        arguments: DatabaseKind.allCases
    )
    func revoke(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, client in
            #expect(try await client.send("GET", "/v1/me").status == 200)
            try await client.client.logout()
            let again = try await SignedClient.signIn(
                server.url,
                username: DemoData.username,
                password: DemoData.password
            )
            #expect(try await again.send("GET", "/v1/me").status == 200)
            let empty = try await again.send(
                "POST",
                "/v1/auth/revoke",
                body: Data(),
                headers: ["Content-Type": "application/x-www-form-urlencoded"]
            )
            #expect(empty.status == 400)
        }
    }

    @Test("stores list by name, page by cursor and show by id", arguments: DatabaseKind.allCases)
    func stores(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let first: Page<Store> = try await client.send("GET", "/v1/stores?limit=4").decode()
            #expect(first.items.count == 4)
            let cursor = try #require(first.nextCursor)
            let second: Page<Store> = try await client.send(
                "GET",
                "/v1/stores?limit=4&cursor=\(cursor)"
            ).decode()
            #expect(second.items.count == 2 && second.nextCursor == nil)
            let names = (first.items + second.items).map(\.name)
            #expect(names == names.sorted())
            #expect(Set((first.items + second.items).map(\.timeZone)).count == 6)
            #expect(Set((first.items + second.items).map(\.market)).count == 3)
            let one: Store = try await client.send("GET", "/v1/stores/\(berlin.uuidString)")
                .decode()
            #expect(one.timeZone == "Europe/Berlin")
            #expect(try await client.send("GET", "/v1/stores/\(UUID().uuidString)").status == 404)
        }
    }

    @Test(
        "reservation search filters by text, code, date, status and store and pages without gaps",
        arguments: DatabaseKind.allCases
    )
    func search(kind: DatabaseKind) async throws {
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded())
        try await withServer(kind, now: now) { _, client in
            var all: [ReservationDetail] = []
            var cursor: String?
            repeat {
                let page: Page<ReservationDetail> = try await client.send(
                    "GET",
                    "/v1/reservations?limit=200" + (cursor.map { "&cursor=\($0)" } ?? "")
                ).decode()
                all += page.items
                cursor = page.nextCursor
            } while cursor != nil
            #expect(all.count == 1000)
            #expect(Set(all.map(\.id)).count == 1000)
            // Upcoming first (not over yet: nearest start first), then past (most recent
            // first), across pages.
            let keys = all.map { detail in
                let upcoming = detail.reservation.endsAt > now
                let start = detail.reservation.startsAt.timeIntervalSince1970
                return (upcoming ? 0 : 1, upcoming ? start : -start, detail.id.uuidString)
            }
            #expect(zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 })
            #expect(keys.first?.0 == 0 && keys.last?.0 == 1)

            let sample = all[123]
            let name: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?limit=200&query=\(sample.customer.familyName.uppercased().addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            ).decode()
            #expect(name.items.contains { $0.id == sample.id })
            #expect(name.items.allSatisfy { $0.customer.familyName == sample.customer.familyName })

            let email = try #require(sample.customer.email?.value)
            let byEmail: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?query=\(email)"
            ).decode()
            #expect(byEmail.items.allSatisfy { $0.customer.id == sample.customer.id })
            #expect(byEmail.items.contains { $0.id == sample.id })

            let phone = try #require(sample.customer.phone?.e164)
            let formatted = "(\(phone.dropFirst().prefix(4))) \(phone.dropFirst(5))"
            let byPhone: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?query=\(formatted.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            ).decode()
            #expect(byPhone.items.contains { $0.id == sample.id })

            let code = sample.reservation.confirmationCode.compact.lowercased()
            let byCode: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?query=\(code)"
            ).decode()
            #expect(byCode.items.map(\.id) == [sample.id])

            let day = Self.localDay(sample)
            let byDate: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?limit=200&date=\(day)"
            ).decode()
            #expect(byDate.items.contains { $0.id == sample.id })
            #expect(byDate.items.allSatisfy { Self.localDay($0) == day })
            let expected = all.filter { Self.localDay($0) == day }.count
            #expect(byDate.items.count == min(expected, 200))

            let statuses: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?limit=200&status=noShow,cancelled&store=\(sydney.uuidString)"
            ).decode()
            #expect(!statuses.items.isEmpty)
            #expect(
                statuses.items.allSatisfy {
                    [.noShow, .cancelled].contains($0.reservation.status) && $0.store.id == sydney
                }
            )
            let repeated: Page<ReservationDetail> = try await client.send(
                "GET",
                "/v1/reservations?limit=200&status=noShow&status=cancelled&store=\(sydney.uuidString)"
            ).decode()
            #expect(repeated.items.map(\.id) == statuses.items.map(\.id))
        }
    }

    static func localDay(_ detail: ReservationDetail) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = detail.store.resolvedTimeZone
        let parts = calendar.dateComponents(
            [.year, .month, .day],
            from: detail.reservation.startsAt
        )
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    @Test(
        "a reservation is found by id and by any form of its code, with its version as ETag",
        arguments: DatabaseKind.allCases
    )
    func show(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let detail = try await firstReservation(client, store: newYork)
            let byID = try await client.send(
                "GET",
                "/v1/reservations/\(detail.id.uuidString.lowercased())"
            )
            #expect(byID.status == 200)
            #expect(byID.header("etag") == "\"\(detail.reservation.version)\"")
            #expect(try byID.decode(ReservationDetail.self) == detail)
            let code = detail.reservation.confirmationCode
            let forms = [
                code.description, code.compact.lowercased(),
                code.passPayload.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
            ]
            for form in forms {
                let reply = try await client.send("GET", "/v1/reservations/by-code/\(form)")
                #expect(reply.status == 200, "code form \(form)")
                #expect(try reply.decode(ReservationDetail.self).id == detail.id)
            }
            let wrongCheck = try await client.send(
                "GET",
                "/v1/reservations/by-code/\(Self.corrupt(code.compact))"
            )
            #expect(wrongCheck.status == 400)
            #expect(try wrongCheck.problem().detail?.contains("'code'") == true)
            let valid = try ConfirmationCode("0000-0000")
            let missing = try await client.send("GET", "/v1/reservations/by-code/\(valid.compact)")
            #expect(missing.status == 404)
        }
    }

    /// The code with its check symbol changed.
    static func corrupt(_ compact: String) -> String {
        let last = compact.last!
        return String(compact.dropLast()) + (last == "0" ? "1" : "0")
    }

    @Test(
        "creating a reservation checks the form, the store's flags and limits, and answers 201 with Location",
        arguments: DatabaseKind.allCases
    )
    func create(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            func body(
                _ store: UUID,
                party: Int = 2,
                customer: String =
                    #""customer": {"givenName": "Lena", "familyName": "Vogel", "email": "lena@example.com", "phone": "030 1234567"}"#
            ) -> String {
                let (start, end) = openSlot(store, days: 2)
                return #"{"storeID": "\#(store.uuidString)", "startsAt": "\#(start)", "#
                    + #""endsAt": "\#(end)", "partySize": \#(party), "topic": "Fitting", "#
                    + #"\#(customer)}"#
            }
            let created = try await client.send("POST", "/v1/reservations", json: body(berlin))
            #expect(created.status == 201, "\(created.text)")
            let detail: ReservationDetail = try created.decode()
            #expect(created.header("location") == "/v1/reservations/\(detail.id.uuidString)")
            #expect(created.header("etag") == "\"1\"")
            #expect(detail.customer.phone?.e164 == "+49301234567")
            #expect(detail.reservation.status == .confirmed)
            let fetched: ReservationDetail = try await client.send(
                "GET",
                "/v1/reservations/\(detail.id.uuidString)"
            ).decode()
            #expect(fetched == detail)

            let invalid = try await client.send(
                "POST",
                "/v1/reservations",
                json: body(
                    newYork,
                    customer:
                        #""customer": {"familyName": "", "email": "not-mail", "shoeSize": "42"}"#
                )
            )
            #expect(invalid.status == 422)
            let problem = try invalid.problem()
            #expect(problem.type == ProblemType.validationFailed)
            #expect(
                Set(problem.errors?.map(\.field) ?? []) == [
                    "customer.givenName", "customer.familyName", "customer.email",
                    "customer.shoeSize",
                ]
            )

            let disabled = try await client.send("POST", "/v1/reservations", json: body(chicago))
            #expect(disabled.status == 403)
            #expect(try disabled.problem().flag == "newReservationsEnabled")

            let tooMany = try await client.send(
                "POST",
                "/v1/reservations",
                json: body(berlin, party: 5)
            )
            #expect(tooMany.status == 422)
            #expect(try tooMany.problem().errors?.first?.field == "partySize")
            let regionAllows = try await client.send(
                "POST",
                "/v1/reservations",
                json: body(sanFrancisco, party: 9)
            )
            #expect(regionAllows.status == 201)

            let unknownStore = try await client.send("POST", "/v1/reservations", json: body(UUID()))
            #expect(unknownStore.status == 422)
            #expect(try unknownStore.problem().errors?.first?.field == "storeID")
            let existing = try await client.send(
                "POST",
                "/v1/reservations",
                json: body(newYork, customer: #""customerID": "\#(detail.customer.id.uuidString)""#)
            )
            #expect(existing.status == 201)
            #expect(try existing.decode(ReservationDetail.self).customer.id == detail.customer.id)
        }
    }

    @Test(
        "check-in and cancel follow the transition table and the store's flags",
        arguments: DatabaseKind.allCases
    )
    func transitions(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let confirmed = try await firstReservation(client, store: newYork)
            let checkedIn = try await client.send(
                "POST",
                "/v1/reservations/\(confirmed.id.uuidString)/check-in"
            )
            #expect(checkedIn.status == 200)
            let after: ReservationDetail = try checkedIn.decode()
            #expect(after.reservation.status == .checkedIn)
            #expect(after.reservation.version == confirmed.reservation.version + 1)
            let again = try await client.send(
                "POST",
                "/v1/reservations/\(confirmed.id.uuidString)/check-in"
            )
            #expect(again.status == 409)
            let problem = try again.problem()
            #expect(problem.type == ProblemType.invalidTransition)
            #expect(problem.from == .checkedIn && problem.to == .checkedIn)
            let cancel = try await client.send(
                "POST",
                "/v1/reservations/\(confirmed.id.uuidString)/cancel"
            )
            #expect(cancel.status == 409)
            #expect(try cancel.problem().from == .checkedIn)

            let completed = try await firstReservation(client, store: newYork, status: .completed)
            let late = try await client.send(
                "POST",
                "/v1/reservations/\(completed.id.uuidString)/check-in"
            )
            #expect(try late.problem().from == .completed)

            let perthReservation = try await firstReservation(client, store: perth)
            let off = try await client.send(
                "POST",
                "/v1/reservations/\(perthReservation.id.uuidString)/check-in"
            )
            #expect(off.status == 403)
            #expect(try off.problem().flag == "checkInEnabled")
            let sydneyReservation = try await firstReservation(client, store: sydney)
            let noCancel = try await client.send(
                "POST",
                "/v1/reservations/\(sydneyReservation.id.uuidString)/cancel"
            )
            #expect(noCancel.status == 403)
            #expect(try noCancel.problem().flag == "cancellationEnabled")
            let cancelled = try await client.send(
                "POST",
                "/v1/reservations/\(perthReservation.id.uuidString)/cancel"
            )
            #expect(try cancelled.decode(ReservationDetail.self).reservation.status == .cancelled)
            #expect(
                try await client.send("POST", "/v1/reservations/\(UUID().uuidString)/cancel").status
                    == 404
            )
        }
    }

    @Test(
        "100 concurrent check-ins with one Idempotency-Key check in once and all get the first answer",
        arguments: DatabaseKind.allCases
    )
    func idempotency(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let confirmed = try await firstReservation(client, store: newYork)
            let path = "/v1/reservations/\(confirmed.id.uuidString)/check-in"
            let key = "check-in-\(UUID().uuidString)"
            let replies = try await withThrowingTaskGroup(of: HTTPReply.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        try await client.send("POST", path, headers: ["Idempotency-Key": key])
                    }
                }
                var all: [HTTPReply] = []
                for try await reply in group { all.append(reply) }
                return all
            }
            #expect(replies.allSatisfy { $0.status == 200 })
            #expect(Set(replies.map(\.data)).count == 1)
            #expect(replies.filter { $0.header("idempotency-replayed") == "true" }.count == 99)
            let stored: ReservationDetail = try await client.send(
                "GET",
                "/v1/reservations/\(confirmed.id.uuidString)"
            ).decode()
            #expect(stored.reservation.status == .checkedIn)
            #expect(stored.reservation.version == confirmed.reservation.version + 1)
            // The same key on another path is refused; a later replay still gets the first answer.
            let other = try await firstReservation(client, store: newYork)
            let reused = try await client.send(
                "POST",
                "/v1/reservations/\(other.id.uuidString)/check-in",
                headers: ["Idempotency-Key": key]
            )
            #expect(reused.status == 422)
            #expect(try reused.problem().type == ProblemType.idempotencyKeyReused)
            let replay = try await client.send("POST", path, headers: ["Idempotency-Key": key])
            #expect(replay.status == 200 && replay.data == replies[0].data)
            let bad = try await client.send(
                "POST",
                path,
                headers: ["Idempotency-Key": String(repeating: "k", count: 256)]
            )
            #expect(bad.status == 400)
        }
    }

    @Test(
        "PATCH needs If-Match, refuses a stale version with 412 and bumps the version",
        arguments: DatabaseKind.allCases
    )
    func patch(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let detail = try await firstReservation(client, store: berlin)
            let path = "/v1/reservations/\(detail.id.uuidString)"
            let version = detail.reservation.version
            let noMatch = try await client.send("PATCH", path, json: #"{"notes": "window"}"#)
            #expect(noMatch.status == 428)
            #expect(try noMatch.problem().type == ProblemType.preconditionRequired)
            let changed = try await client.send(
                "PATCH",
                path,
                json: #"{"notes": "window", "partySize": 3}"#,
                headers: ["If-Match": "\"\(version)\""]
            )
            #expect(changed.status == 200, "\(changed.text)")
            let updated: ReservationDetail = try changed.decode()
            #expect(
                updated.reservation.version == version + 1 && updated.reservation.notes == "window"
                    && updated.reservation.partySize == 3
            )
            #expect(changed.header("etag") == "\"\(version + 1)\"")
            let stale = try await client.send(
                "PATCH",
                path,
                json: #"{"topic": "Other"}"#,
                headers: ["If-Match": "\"\(version)\""]
            )
            #expect(stale.status == 412)
            #expect(try stale.problem().currentVersion == version + 1)
            let garbage = try await client.send(
                "PATCH",
                path,
                json: #"{"topic": "Other"}"#,
                headers: ["If-Match": "abc"]
            )
            #expect(garbage.status == 400)
            let order = try await client.send(
                "PATCH",
                path,
                json: #"{"endsAt": "2000-01-01T00:00:00Z"}"#,
                headers: ["If-Match": "\"\(version + 1)\""]
            )
            #expect(order.status == 422)
            #expect(try order.problem().errors?.first?.field == "endsAt")
            let overLimit = try await client.send(
                "PATCH",
                path,
                json: #"{"partySize": 7}"#,
                headers: ["If-Match": "\"\(version + 1)\""]
            )
            #expect(overLimit.status == 422)
            let empty = try await client.send(
                "PATCH",
                path,
                json: "{}",
                headers: ["If-Match": "\"\(version + 1)\""]
            )
            #expect(empty.status == 422)
        }
    }

    @Test(
        "a cancelled, completed, no-show or checked-in reservation cannot be rescheduled or edited: 409 saying why",
        arguments: DatabaseKind.allCases
    )
    func patchClosed(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            for status in [Reservation.Status.cancelled, .completed, .noShow, .checkedIn] {
                let page: Page<ReservationDetail> = try await client.send(
                    "GET",
                    "/v1/reservations?status=\(status.rawValue)&limit=1"
                ).decode()
                let detail = try #require(page.items.first, "no \(status) reservation")
                let path = "/v1/reservations/\(detail.id.uuidString)"
                let start = detail.reservation.startsAt.addingTimeInterval(86_400)
                let moved = try await client.send(
                    "PATCH",
                    path,
                    json:
                        #"{"startsAt": "\#(RFC3339.string(from: start))", "endsAt": "\#(RFC3339.string(from: start + 1800))"}"#,
                    headers: ["If-Match": "\"\(detail.reservation.version)\""]
                )
                #expect(moved.status == 409, "\(status): \(moved.text)")
                let problem = try moved.problem()
                #expect(problem.type == ProblemType.notEditable)
                #expect(problem.from == status)
                #expect(
                    problem.detail?.contains("\(status.rawValue) reservation cannot be changed")
                        == true
                )
                let notes = try await client.send(
                    "PATCH",
                    path,
                    json: #"{"notes": "late"}"#,
                    headers: ["If-Match": "\"\(detail.reservation.version)\""]
                )
                #expect(notes.status == 409)
                let after: ReservationDetail = try await client.send("GET", path).decode()
                #expect(after == detail, "\(status) reservation unchanged")
            }
        }
    }

    @Test(
        "customers are searched, shown and created against the form",
        arguments: DatabaseKind.allCases
    )
    func customers(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            // Every demo customer has an example.com address.
            let page: Page<Customer> = try await client.send(
                "GET",
                "/v1/customers?limit=150&query=example.com"
            ).decode()
            let rest: Page<Customer> = try await client.send(
                "GET",
                "/v1/customers?limit=150&query=example.com&cursor=\(try #require(page.nextCursor))"
            ).decode()
            #expect(page.items.count == 150 && rest.items.count == 50 && rest.nextCursor == nil)
            #expect(Set((page.items + rest.items).map(\.id)).count == 200)
            let sample = page.items[17]
            let found: Page<Customer> = try await client.send(
                "GET",
                "/v1/customers?query=\(sample.givenName.lowercased())%20\(sample.familyName.lowercased().addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            ).decode()
            #expect(found.items.contains(sample))
            let shown: Customer = try await client.send(
                "GET",
                "/v1/customers/\(sample.id.uuidString)"
            ).decode()
            #expect(shown == sample)
            let created = try await client.send(
                "POST",
                "/v1/customers",
                json:
                    #"{"storeID": "\#(newYork.uuidString)", "fields": {"givenName": "Rae", "familyName": "Park", "phone": "(212) 555-0199"}}"#,
                headers: ["Idempotency-Key": "new-customer-1"]
            )
            #expect(created.status == 201)
            let customer: Customer = try created.decode()
            #expect(customer.phone?.e164 == "+12125550199")
            let replay = try await client.send(
                "POST",
                "/v1/customers",
                json:
                    #"{"storeID": "\#(newYork.uuidString)", "fields": {"givenName": "Rae", "familyName": "Park", "phone": "(212) 555-0199"}}"#,
                headers: ["Idempotency-Key": "new-customer-1"]
            )
            #expect(
                replay.status == 201 && replay.data == created.data
                    && replay.header("idempotency-replayed") == "true"
            )
            let invalid = try await client.send(
                "POST",
                "/v1/customers",
                json: #"{"fields": {"givenName": "A"}}"#
            )
            #expect(invalid.status == 422)
            #expect(try invalid.problem().errors?.map(\.field) == ["fields.familyName"])
        }
    }

    @Test(
        "products are listed, found by any GTIN form, and their PNG images served with ETag and 304",
        arguments: DatabaseKind.allCases
    )
    func products(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let page: Page<Product> = try await client.send("GET", "/v1/products?limit=200")
                .decode()
            #expect(page.items.count == 200 && page.nextCursor != nil)
            let product = page.items[42]
            #expect(product.imageReference == "/v1/products/\(product.gtin.gtin14)/image")
            for form in [product.gtin.description, product.gtin.gtin14] {
                let shown: Product = try await client.send("GET", "/v1/products/\(form)").decode()
                #expect(shown == product)
            }
            let search: Page<Product> = try await client.send(
                "GET",
                "/v1/products?query=\(product.sku.lowercased())"
            ).decode()
            #expect(search.items == [product])
            let image = try await client.send(
                "GET",
                "/v1/products/\(product.gtin.description)/image"
            )
            #expect(image.status == 200)
            #expect(image.header("content-type") == "image/png")
            #expect(image.data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            #expect(image.header("cache-control") == "private, max-age=300")
            #expect(image.header("last-modified") != nil)
            let etag = try #require(image.header("etag"))
            let cached = try await client.send(
                "GET",
                "/v1/products/\(product.gtin.description)/image",
                headers: ["If-None-Match": etag]
            )
            #expect(cached.status == 304 && cached.data.isEmpty)
            let badDigit = try await client.send("GET", "/v1/products/4006381333932")
            #expect(badDigit.status == 400)
            #expect(try badDigit.problem().detail?.contains("gtin") == true)
            #expect(try await client.send("GET", "/v1/products/4006381333931").status == 404)
        }
    }

    @Test(
        "bad input on every signed route is a 400/413/422 problem naming the input",
        arguments: DatabaseKind.allCases
    )
    func badInput(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let cases: [(String, String, String?, Int, String)] = [
                ("GET", "/v1/stores?limit=0", nil, 400, "limit"),
                ("GET", "/v1/stores?cursor=%21%21", nil, 400, "cursor"),
                ("GET", "/v1/stores/Not!", nil, 400, "'id'"),
                ("GET", "/v1/stores/not-a-store", nil, 404, "store"),
                ("GET", "/v1/reservations?limit=201", nil, 400, "limit"),
                ("GET", "/v1/reservations?cursor=djF4", nil, 400, "cursor"),
                ("GET", "/v1/reservations?date=2026-02-30", nil, 400, "date"),
                ("GET", "/v1/reservations?status=lost", nil, 400, "status"),
                ("GET", "/v1/reservations?store=Berlin!", nil, 400, "store"),
                ("GET", "/v1/reservations?store=berlin", nil, 404, "store"),
                ("GET", "/v1/reservations?allStores=maybe", nil, 400, "allStores"),
                ("GET", "/v1/customers", nil, 400, "'query'"),
                ("GET", "/v1/reservations/123", nil, 400, "'id'"),
                ("POST", "/v1/reservations", "{not json", 400, "JSON"),
                ("POST", "/v1/reservations", "", 400, "empty"),
                ("POST", "/v1/reservations", #"{"storeID": "x"}"#, 422, "storeID"),
                (
                    "POST", "/v1/reservations", #"{"storeID": "\#(newYork.uuidString)"}"#, 422,
                    "startsAt"
                ),
                ("PATCH", "/v1/reservations/xyz", "{}", 400, "'id'"),
                ("POST", "/v1/reservations/xyz/check-in", nil, 400, "'id'"),
                ("POST", "/v1/reservations/xyz/cancel", nil, 400, "'id'"),
                ("GET", "/v1/customers?limit=abc", nil, 400, "limit"),
                ("GET", "/v1/customers/1", nil, 400, "'id'"),
                ("POST", "/v1/customers", "[]", 422, ""),
                (
                    "POST", "/v1/customers", #"{"fields": {"givenName": 3}}"#, 422,
                    "fields.givenName"
                ),
                ("GET", "/v1/products?limit=-1", nil, 400, "limit"),
                ("GET", "/v1/products/12345", nil, 400, "gtin"),
                ("GET", "/v1/products/abc/image", nil, 400, "gtin"),
                ("GET", "/v1/reservations/by-code/U000-0000", nil, 400, "code"),
            ]
            for (method, path, json, status, mention) in cases {
                let reply = try await client.send(method, path, json: json)
                #expect(reply.status == status, "\(method) \(path): \(reply.text)")
                let problem = try reply.problem()
                #expect(problem.status == status)
                let text =
                    (problem.detail ?? "")
                    + (problem.errors?.map(\.field).joined(separator: " ") ?? "")
                #expect(mention.isEmpty || text.contains(mention), "\(method) \(path): \(text)")
            }
            let big = String(repeating: "a", count: 70_000)
            let tooLarge = try await client.send(
                "POST",
                "/v1/reservations",
                json: #"{"notes": "\#(big)"}"#
            )
            #expect(tooLarge.status == 413)
            #expect(try tooLarge.problem().type == ProblemType.payloadTooLarge)
        }
    }

    @Test(
        "client configuration: ETag and 304, flag precedence store > region > market > default, forced update",
        arguments: DatabaseKind.allCases
    )
    func configuration(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, _ in
            func get(_ query: String, headers: [String: String] = [:]) async throws -> HTTPReply {
                try await PlainHTTP.send(
                    "GET",
                    URL(string: server.url.absoluteString + "/v1/config/client?" + query)!,
                    headers: headers
                )
            }
            let global: ClientConfigurationResponse = try await get("app=scan&version=0.1.0")
                .decode()
            #expect(global.store == nil)
            #expect(global.flags["maxPartySize"] == .number(8))
            #expect(global.updateRequired == false)
            let cases: [(UUID, Double)] = [
                (berlin, 4), (sanFrancisco, 10), (newYork, 6), (sydney, 8),
            ]
            for (store, expected) in cases {
                let response: ClientConfigurationResponse = try await get(
                    "app=scan&version=0.1.0&store=\(store.uuidString)"
                ).decode()
                #expect(response.flags["maxPartySize"] == .number(expected), "store \(store)")
                #expect(response.store?.id == store)
            }
            let perthFlags: ClientConfigurationResponse = try await get(
                "app=scan&version=0.1.0&store=\(perth.uuidString)"
            ).decode()
            #expect(perthFlags.flags["checkInEnabled"] == .bool(false))
            #expect(perthFlags.flags["storeNotice"] == .string("Public holiday hours apply."))
            let old: ClientConfigurationResponse = try await get("app=scan&version=0.0.9").decode()
            #expect(old.updateRequired)
            #expect(old.configuration.minimumClientVersion.description == "0.1.0")

            let first = try await get("app=reservations&version=0.1.0&store=\(berlin.uuidString)")
            let etag = try #require(first.header("etag"))
            #expect(etag.hasPrefix("\"\(global.configuration.configVersion)-"))
            let unchanged = try await get(
                "app=reservations&version=0.1.0&store=\(berlin.uuidString)",
                headers: ["If-None-Match": etag]
            )
            #expect(unchanged.status == 304)
            let otherStore = try await get(
                "app=reservations&version=0.1.0&store=\(newYork.uuidString)",
                headers: ["If-None-Match": etag]
            )
            #expect(otherStore.status == 200)

            // An admin change bumps configVersion and so the ETag, seen by the running server.
            let admin = try await StoreAdmin.open(
                server.location,
                passwordIterations: testPasswordCost,
                logger: TestDatabases.logger
            )
            try await admin.config.setFlag(
                "maxPartySize",
                value: .number(3),
                scope: .region("DE-BE")
            )
            try await admin.config.setMinimumVersion(
                app: "reservations",
                version: SemanticVersion(0, 2, 0)
            )
            await admin.close()
            let changed = try await get(
                "app=reservations&version=0.1.0&store=\(berlin.uuidString)",
                headers: ["If-None-Match": etag]
            )
            #expect(changed.status == 200)
            let response: ClientConfigurationResponse = try changed.decode()
            #expect(
                response.flags["maxPartySize"] == .number(4),
                "the store override still wins over the new region value"
            )
            #expect(response.updateRequired)
            #expect(response.configuration.configVersion > global.configuration.configVersion)

            for (query, status, mention) in [
                ("version=0.1.0", 400, "'app'"), ("app=scan", 400, "'version'"),
                ("app=scan&version=one", 400, "'version'"),
                ("app=sc%20an&version=0.1.0", 400, "'app'"),
                ("app=scan&version=0.1.0&store=x", 400, "'store'"),
                ("app=scan&version=0.1.0&store=\(UUID().uuidString)", 404, "store"),
            ] {
                let reply = try await get(query)
                #expect(reply.status == status, "\(query)")
                #expect(try reply.problem().detail?.contains(mention) == true, "\(query)")
            }
        }
    }

    @Test(
        "metrics count requests by route and status in Prometheus text",
        arguments: [DatabaseKind.sqlite]
    )
    func metrics(kind: DatabaseKind) async throws {
        try await withServer(kind) { server, client in
            _ = try await client.send("GET", "/v1/stores")
            let text = try await PlainHTTP.send("GET", server.url.appendingPathComponent("metrics"))
                .text
            #expect(
                text.contains(#"store_server_responses_total{route="/v1/stores",status="200"}"#)
            )
            #expect(text.contains("store_server_request_duration_seconds"))
        }
    }

    @Test(
        "/metrics on a listener of its own is served there only; on the API's listener never to what a trusted proxy forwards",
        arguments: DatabaseKind.allCases
    )
    func metricsListener(kind: DatabaseKind) async throws {
        let separate = try await TestServer.start(kind, metricsPort: 0)
        do {
            let metricsURL = try #require(separate.server.metricsURL)
            #expect(metricsURL.port != separate.url.port)
            let api = try await PlainHTTP.send(
                "GET",
                separate.url.appendingPathComponent("metrics")
            )
            #expect(api.status == 404, "the API's listener keeps the numbers to itself")
            let page = try await PlainHTTP.send("GET", metricsURL.appendingPathComponent("metrics"))
            #expect(page.status == 200)
            #expect(page.text.contains("store_server_responses_total"))
            let other = try await PlainHTTP.send(
                "GET",
                metricsURL.appendingPathComponent("v1/stores")
            )
            #expect(other.status == 404, "the metrics listener serves nothing else")
        } catch {
            await separate.stop()
            throw error
        }
        await separate.stop()
        // One listener behind a proxy on this machine: its requests are clients', not ours.
        let proxied = try await TestServer.start(kind, trustedProxies: ["127.0.0.1/32"])
        do {
            let reply = try await PlainHTTP.send(
                "GET",
                proxied.url.appendingPathComponent("metrics"),
                headers: ["X-Forwarded-For": "203.0.113.5"]
            )
            #expect(reply.status == 404)
        } catch {
            await proxied.stop()
            throw error
        }
        await proxied.stop()
    }
}

extension Date {
    /// Rounded to the millisecond, as the wire format keeps it.
    func rounded() -> Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
