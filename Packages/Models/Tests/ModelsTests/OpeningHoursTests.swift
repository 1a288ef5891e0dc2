import Foundation
import Models
import Testing

@Suite("opening hours: spans, days, the slot rule and the wire form")
struct OpeningHoursTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    static func week() throws -> OpeningHours {
        var hours = OpeningHours()
        hours.set(
            try OpeningHours.Span(parsing: "09:00-20:00"),
            on: OpeningHours.weekdays(parsing: "mon-sat")!
        )
        return hours
    }

    @Test(
        "spans read HH:MM-HH:MM up to 24:00 and refuse the rest, naming the input",
        arguments: [
            ("09:00-20:00", "09:00-20:00"), ("9:30–17:00", "09:30-17:00"),
            ("00:00-24:00", "00:00-24:00"),
        ]
    )
    func spans(text: String, shown: String) throws {
        #expect(try OpeningHours.Span(parsing: text).description == shown)
    }

    @Test(
        "bad spans are refused with the rule",
        arguments: ["20:00-09:00", "9-5", "24:30-25:00", "", "09:00-09:00", "x:00-10:00"]
    )
    func badSpans(text: String) {
        #expect(throws: ValidationError.self) { try OpeningHours.Span(parsing: text) }
    }

    @Test("days are a weekday, a short name, a range or all")
    func days() {
        #expect(OpeningHours.weekdays(parsing: "all")?.count == 7)
        #expect(OpeningHours.weekdays(parsing: "Sun") == [.sunday])
        #expect(
            OpeningHours.weekdays(parsing: "mon-fri") == [
                .monday, .tuesday, .wednesday, .thursday, .friday,
            ]
        )
        #expect(OpeningHours.weekdays(parsing: "fri-mon") == nil)
        #expect(OpeningHours.weekdays(parsing: "someday") == nil)
    }

    @Test("a slot fits when it starts and ends within its local day's span, in the store's zone")
    func slots() throws {
        let hours = try Self.week()
        func fits(_ start: String, _ end: String) -> Bool {
            hours.allows(startsAt: date(start), endsAt: date(end), in: Self.berlin)
        }
        // 2031-06-02 is a Monday (+02:00), 2031-06-01 a Sunday, 2031-12-01 a Monday (+01:00).
        #expect(fits("2031-06-02T07:00:00Z", "2031-06-02T07:30:00Z"))  // 09:00 local
        #expect(fits("2031-06-02T17:30:00Z", "2031-06-02T18:00:00Z"))  // ends 20:00
        #expect(!fits("2031-06-02T06:59:00Z", "2031-06-02T07:30:00Z"))
        #expect(!fits("2031-06-02T17:45:00Z", "2031-06-02T18:15:00Z"))
        #expect(!fits("2031-06-01T10:00:00Z", "2031-06-01T10:30:00Z"))  // Sunday
        #expect(fits("2031-12-01T08:00:00Z", "2031-12-01T08:30:00Z"))  // 09:00 in winter
        #expect(!fits("2031-12-01T07:30:00Z", "2031-12-01T08:00:00Z"))
        #expect(
            OpeningHours.allDay.allows(
                startsAt: date("2031-06-02T21:30:00Z"),
                endsAt: date("2031-06-02T22:00:00Z"),
                in: Self.berlin
            )
        )  // 23:30 to midnight
    }

    @Test("the week reads grouped, and goes over the wire as seven days with null for closed")
    func wire() throws {
        let hours = try Self.week()
        #expect(hours.description == "Mon–Sat 09:00-20:00, Sun closed")
        let data = try JSONEncoder().encode(hours)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object.count == 7 && object["sunday"] is NSNull)
        #expect(try JSONDecoder().decode(OpeningHours.self, from: data) == hours)
        let bad = Data(#"{"monday": {"opens": "20:00", "closes": "09:00"}}"#.utf8)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(OpeningHours.self, from: bad)
        }
    }

    @Test("the rule names startsAt and says the slot and the hours in the store's local time")
    func rule() throws {
        let store = try Store(
            name: "Berlin Kurfürstendamm",
            timeZone: "Europe/Berlin",
            market: "DE",
            region: "DE-BE",
            openingHours: try Self.week()
        )
        #expect(throws: ValidationError.self) {
            try ReservationRules.checkOpeningHours(
                startsAt: date("2031-06-01T10:00:00Z"),
                endsAt: date("2031-06-01T10:30:00Z"),
                store: store
            )
        }
        do {
            try ReservationRules.checkOpeningHours(
                startsAt: date("2031-06-01T10:00:00Z"),
                endsAt: date("2031-06-01T10:30:00Z"),
                store: store
            )
        } catch {
            #expect(error.field == "startsAt")
            #expect(
                error.reason
                    == "Sunday 2031-06-01 12:00–12:30 is outside the opening hours of Berlin Kurfürstendamm (closed on Sundays; Europe/Berlin time: Mon–Sat 09:00-20:00, Sun closed)"
            )
        }
        var open = store
        open.openingHours = nil
        try ReservationRules.checkOpeningHours(
            startsAt: date("2031-06-01T01:00:00Z"),
            endsAt: date("2031-06-01T01:30:00Z"),
            store: open
        )
    }

    @Test("lists go upcoming first (nearest first), then past ones (most recent first)")
    func listOrder() throws {
        let base = try APITests.detail()
        let now = date("2026-12-02T12:00:00Z")
        func at(_ start: String, minutes: Double = 60) throws -> ReservationDetail {
            var detail = base
            detail.reservation.startsAt = date(start)
            detail.reservation.endsAt = date(start) + minutes * 60
            detail.reservation.id = UUID()
            return detail
        }
        let running = try at("2026-12-02T11:30:00Z")  // not over yet: upcoming
        let soon = try at("2026-12-02T13:00:00Z")
        let later = try at("2026-12-05T09:00:00Z")
        let justOver = try at("2026-12-02T10:00:00Z")
        let lastWeek = try at("2026-11-25T10:00:00Z")
        let listed = [lastWeek, later, justOver, soon, running].sorted(
            by: ReservationDetail.upcomingFirst(now: now)
        )
        #expect(listed.map(\.id) == [running, soon, later, justOver, lastWeek].map(\.id))
    }
}
