import Foundation
import Models
import Synchronization
import Testing

@testable import StoreServer

/// Issue 28 point 1: opening hours are store data, served with the stores, set by
/// `store-server store hours`, and the server refuses a booking or a move outside them.
@Suite("opening hours of stores")
struct OpeningHoursTests {
    /// A booking at the demo's Berlin store from `start` to `end` (RFC 3339).
    static func book(_ client: SignedClient, _ start: String, _ end: String) async throws
        -> HTTPReply
    {
        try await client.send(
            "POST",
            "/v1/reservations",
            json:
                #"{"storeID": "\#(berlin.uuidString)", "startsAt": "\#(start)", "endsAt": "\#(end)", "partySize": 1, "topic": "Fitting", "customer": {"givenName": "Lena", "familyName": "Vogel"}}"#
        )
    }

    @Test(
        "stores are served with their opening hours, in lists and in reservations",
        arguments: DatabaseKind.allCases
    )
    func served(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            let store: Store = try await client.send("GET", "/v1/stores/\(berlin.uuidString)")
                .decode()
            let hours = try #require(store.openingHours)
            #expect(hours.description == "Mon–Sat 09:00-20:00, Sun closed")
            #expect(hours.span(on: .sunday) == nil)
            let raw = try await client.send("GET", "/v1/stores/berlin-kurfuerstendamm")
            let object = try #require(
                try JSONSerialization.jsonObject(with: raw.data) as? [String: Any]
            )
            let week = try #require(object["openingHours"] as? [String: Any])
            #expect(week["sunday"] is NSNull)
            #expect((week["monday"] as? [String: String]) == ["opens": "09:00", "closes": "20:00"])
            let stores: Page<Store> = try await client.send("GET", "/v1/stores?limit=200").decode()
            #expect(stores.items.count == 6 && stores.items.allSatisfy { $0.openingHours != nil })
            let detail = try await firstReservation(client, store: berlin)
            #expect(detail.store.openingHours == hours)
        }
    }

    @Test(
        "a booking or a move outside the hours is refused (422) with the hours in local time",
        arguments: DatabaseKind.allCases
    )
    func refused(kind: DatabaseKind) async throws {
        try await withServer(kind) { _, client in
            // 2031-06-01 is a Sunday, 2031-06-02 a Monday; Berlin is at +02:00 then.
            let sunday = try await Self.book(
                client,
                "2031-06-01T12:00:00+02:00",
                "2031-06-01T12:30:00+02:00"
            )
            #expect(sunday.status == 422, "\(sunday.text)")
            let problem = try sunday.problem()
            #expect(problem.type == ProblemType.validationFailed)
            #expect(problem.errors?.map(\.field) == ["startsAt"])
            let detail = problem.detail ?? ""
            #expect(detail.contains("Sunday 2031-06-01 12:00–12:30"), "\(detail)")
            #expect(detail.contains("closed on Sundays"), "\(detail)")
            #expect(detail.contains("Europe/Berlin time: Mon–Sat 09:00-20:00, Sun closed"))

            let early = try await Self.book(
                client,
                "2031-06-02T08:30:00+02:00",
                "2031-06-02T09:00:00+02:00"
            )
            #expect(early.status == 422)
            #expect(
                try early.problem().detail?.contains("Monday 2031-06-02 08:30–09:00") == true
            )
            #expect(try early.problem().detail?.contains("open 09:00-20:00 that day") == true)
            let overClosing = try await Self.book(
                client,
                "2031-06-02T19:45:00+02:00",
                "2031-06-02T20:15:00+02:00"
            )
            #expect(overClosing.status == 422)
            let lastSlot = try await Self.book(
                client,
                "2031-06-02T19:30:00+02:00",
                "2031-06-02T20:00:00+02:00"
            )
            #expect(lastSlot.status == 201, "\(lastSlot.text)")

            let created: ReservationDetail = try await Self.book(
                client,
                "2031-06-02T12:00:00+02:00",
                "2031-06-02T12:30:00+02:00"
            ).decode()
            let path = "/v1/reservations/\(created.id.uuidString)"
            func move(_ start: String, _ end: String, version: Int) async throws -> HTTPReply {
                try await client.send(
                    "PATCH",
                    path,
                    json: #"{"startsAt": "\#(start)", "endsAt": "\#(end)"}"#,
                    headers: ["If-Match": "\"\(version)\""]
                )
            }
            let toSunday = try await move(
                "2031-06-08T12:00:00+02:00",
                "2031-06-08T12:30:00+02:00",
                version: created.reservation.version
            )
            #expect(toSunday.status == 422, "\(toSunday.text)")
            #expect(try toSunday.problem().detail?.contains("closed on Sundays") == true)
            let toNight = try await move(
                "2031-06-03T21:00:00+02:00",
                "2031-06-03T21:30:00+02:00",
                version: created.reservation.version
            )
            #expect(toNight.status == 422)
            #expect(try toNight.problem().detail?.contains("Tuesday 2031-06-03 21:00") == true)
            let moved = try await move(
                "2031-06-03T10:00:00+02:00",
                "2031-06-03T10:30:00+02:00",
                version: created.reservation.version
            )
            #expect(moved.status == 200, "\(moved.text)")
        }
    }

    @Test(
        "store-server store hours sets a store's week: an unknown store is 3 first, bad input 64",
        arguments: DatabaseKind.allCases
    )
    func adminCommand(kind: DatabaseKind) async throws {
        let location = try await TestDatabases.make(kind)
        let db = AdminCommandTests.database(location)
        let unknown = try await AdminCommandTests.run(
            ["store", "hours", "nowhere", "someday", "25:99"] + db
        )
        #expect(unknown.status == 3, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("store 'nowhere' does not exist"), "\(unknown.stderr)")
        for (days, hours) in [("someday", "09:00-18:00"), ("sun", "18:00-09:00"), ("sun", "9-5")] {
            let bad = try await AdminCommandTests.run(
                ["store", "hours", "berlin-kurfuerstendamm", days, hours] + db
            )
            #expect(bad.status == 64, "\(days) \(hours): \(bad.stderr)")
            #expect(bad.stderr.hasPrefix("error: "), "\(bad.stderr)")
            #expect(
                bad.stderr.contains(days == "someday" ? "someday" : hours),
                "\(bad.stderr)"
            )
        }
        let sunday = try await AdminCommandTests.run(
            ["store", "hours", "berlin-kurfuerstendamm", "sunday", "12:00-16:00"] + db
        )
        #expect(sunday.status == 0, "\(sunday.stderr)")
        #expect(sunday.stdout.contains("Mon–Sat 09:00-20:00, Sun 12:00-16:00"), "\(sunday.stdout)")
        let closed = try await AdminCommandTests.run(
            ["store", "hours", berlin.uuidString, "mon-fri", "closed"] + db
        )
        #expect(closed.status == 0, "\(closed.stderr)")
        let shown = try await AdminCommandTests.run(
            ["store", "hours", "berlin-kurfuerstendamm", "--json"] + db
        )
        let store = try ModelsJSON.makeDecoder().decode(Store.self, from: Data(shown.stdout.utf8))
        #expect(
            store.openingHours?.description == "Mon–Fri closed, Sat 09:00-20:00, Sun 12:00-16:00"
        )

        // The server takes the new hours: Sunday afternoon now, no longer Monday.
        let server = try await TestServer.start(kind, location: location)
        do {
            let client = try await server.client()
            let onSunday = try await Self.book(
                client,
                "2031-06-01T13:00:00+02:00",
                "2031-06-01T13:30:00+02:00"
            )
            #expect(onSunday.status == 201, "\(onSunday.text)")
            let onMonday = try await Self.book(
                client,
                "2031-06-02T13:00:00+02:00",
                "2031-06-02T13:30:00+02:00"
            )
            #expect(onMonday.status == 422)
            #expect(try onMonday.problem().detail?.contains("closed on Mondays") == true)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "search pages keep the first page's order (upcoming first) though the clock moves between them",
        arguments: DatabaseKind.allCases
    )
    func searchOrderAcrossPages(kind: DatabaseKind) async throws {
        // Each search reads the clock; it moves six hours every time it is read.
        let start = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded())
        let reads = Mutex(0)
        let server = try await TestServer.start(
            kind,
            calendarClock: {
                start + Double(
                    reads.withLock { count in
                        defer { count += 1 }
                        return count
                    }
                ) * 6 * 3_600
            }
        )
        do {
            let client = try await server.client()
            var all: [ReservationDetail] = []
            var cursor: String?
            var split: Date?
            repeat {
                let page: Page<ReservationDetail> = try await client.send(
                    "GET",
                    "/v1/reservations?store=berlin-kurfuerstendamm&limit=23"
                        + (cursor.map { "&cursor=\($0)" } ?? "")
                ).decode()
                all += page.items
                cursor = page.nextCursor
                // The first page's split instant, as its cursor carries it.
                if split == nil, let cursor,
                    let values = PageCursor(
                        decoding: cursor,
                        count: Repository.reservationCursorValues
                    )?.values, let millis = Int64(values[0])
                {
                    split = DBTime.date(millis)
                }
            } while cursor != nil
            #expect(reads.withLock { $0 } > 3)
            let pivot = try #require(split)
            #expect(pivot.timeIntervalSince(start) < 2 * 6 * 3_600)
            #expect(Set(all.map(\.id)).count == all.count && all.count > 100)
            let keys = all.map { detail in
                let upcoming = detail.reservation.endsAt > pivot
                let begins = detail.reservation.startsAt.timeIntervalSince1970
                return (upcoming ? 0 : 1, upcoming ? begins : -begins, detail.id.uuidString)
            }
            #expect(zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 })
            #expect(keys.first?.0 == 0 && keys.last?.0 == 1)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
