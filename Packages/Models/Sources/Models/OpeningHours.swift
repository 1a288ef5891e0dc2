public import Foundation

/// A store's opening hours: for each weekday one span of the store's local (wall-clock) time,
/// or closed. A store without opening hours takes reservations at any time.
///
/// Rules: a span is `HH:MM-HH:MM` with the opening before the closing, from 00:00 to 24:00
/// (spans do not cross midnight). A reservation fits when it starts and ends within the span of
/// the local day it starts on (``allows(startsAt:endsAt:in:)``).
///
/// On the wire an object with the seven weekday names as keys, each
/// `{"opens": "09:00", "closes": "20:00"}` or `null` for a closed day (a missing day is closed).
public struct OpeningHours: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A day of the week, Monday first.
    public enum Weekday: String, Sendable, Hashable, CaseIterable, Comparable {
        case monday, tuesday, wednesday, thursday, friday, saturday, sunday

        /// `Monday`.
        public var name: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
        /// `Mon`.
        public var shortName: String { String(name.prefix(3)) }

        /// The weekday of Foundation's `Calendar` numbering (1 Sunday … 7 Saturday).
        public init(calendarWeekday: Int) {
            let monday0 = ((calendarWeekday - 2) % 7 + 7) % 7
            self = Weekday.allCases[monday0]
        }

        /// A weekday by its name or first three letters, any case (`monday`, `Mon`).
        public init?(parsing text: String) {
            let lower = text.lowercased()
            guard
                let day = Weekday.allCases.first(where: {
                    $0.rawValue == lower || String($0.rawValue.prefix(3)) == lower
                })
            else { return nil }
            self = day
        }

        /// Monday before Tuesday … before Sunday.
        public static func < (lhs: Weekday, rhs: Weekday) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// The hours of one day: from `opens` to `closes`, minutes after local midnight.
    public struct Span: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The first minute open (0…1439).
        public let opens: Int
        /// The minute it closes (1…1440, after `opens`).
        public let closes: Int

        /// A span from minutes after midnight; throws when it is empty or outside the day.
        public init(opens: Int, closes: Int) throws(ValidationError) {
            guard (0..<1440).contains(opens), (1...1440).contains(closes) else {
                throw ValidationError(
                    field: "openingHours",
                    code: .outOfRange,
                    reason: "times must be from 00:00 to 24:00"
                )
            }
            guard opens < closes else {
                throw ValidationError(
                    field: "openingHours",
                    code: .invalidOrder,
                    reason:
                        "\(Span.clock(closes)) is not after \(Span.clock(opens)) (spans do not cross midnight)"
                )
            }
            self.opens = opens
            self.closes = closes
        }

        /// A span typed as `HH:MM-HH:MM` (`9:00-20:00` and an en dash are taken too).
        public init(parsing text: String) throws(ValidationError) {
            let parts = text.trimmingCharacters(in: .whitespaces)
                .replacingOccurrences(of: "–", with: "-")
                .split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, let opens = Span.minutes(parts[0]),
                let closes = Span.minutes(parts[1])
            else {
                throw ValidationError(
                    field: "openingHours",
                    code: .invalidFormat,
                    reason:
                        "'\(text.prefix(40))' is not HH:MM-HH:MM (for example 09:00-20:00) or closed"
                )
            }
            try self.init(opens: opens, closes: closes)
        }

        /// `09:00-20:00`.
        public var description: String { "\(Span.clock(opens))-\(Span.clock(closes))" }

        /// Whether the minutes `from`…`to` of a day lie within the span.
        public func contains(from: Int, to: Int) -> Bool { opens <= from && to <= closes }

        /// `HH:MM` for minutes after midnight (1440 is `24:00`).
        static func clock(_ minutes: Int) -> String {
            let hour = minutes / 60
            let minute = minutes % 60
            return (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
        }

        static func minutes(_ text: Substring) -> Int? {
            let parts = text.trimmingCharacters(in: .whitespaces).split(
                separator: ":",
                omittingEmptySubsequences: false
            )
            guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
                parts.allSatisfy({ $0.allSatisfy(\.isASCII) }),
                let hour = Int(parts[0]), let minute = Int(parts[1]),
                (0...24).contains(hour), (0..<60).contains(minute), hour < 24 || minute == 0
            else { return nil }
            return hour * 60 + minute
        }

        private enum CodingKeys: String, CodingKey { case opens, closes }

        /// Decodes `{"opens": "09:00", "closes": "20:00"}` and checks it.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let opens = try c.decode(String.self, forKey: .opens)
            let closes = try c.decode(String.self, forKey: .closes)
            self = try c.validating(.opens) { () throws(ValidationError) in
                try Span(parsing: "\(opens)-\(closes)")
            }
        }

        /// Encodes `{"opens": "09:00", "closes": "20:00"}`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(Span.clock(opens), forKey: .opens)
            try c.encode(Span.clock(closes), forKey: .closes)
        }
    }

    /// The span of each open day; a day not here is closed.
    public private(set) var days: [Weekday: Span]

    /// Hours from the spans of the open days (the others are closed).
    public init(_ days: [Weekday: Span] = [:]) { self.days = days }

    /// Open every day, all day: what a store without hours allows.
    public static var allDay: OpeningHours {
        // 00:00-24:00 is valid by construction.
        let span = try! Span(opens: 0, closes: 1440)
        return OpeningHours(Dictionary(uniqueKeysWithValues: Weekday.allCases.map { ($0, span) }))
    }

    /// The span of `day`, nil when the store is closed then.
    public func span(on day: Weekday) -> Span? { days[day] }

    /// Sets `span` (nil: closed) on each of `days`.
    public mutating func set(_ span: Span?, on days: [Weekday]) {
        for day in days { self.days[day] = span }
    }

    /// Weekdays typed by people: `all`, a day (`monday`, `mon`) or a range (`mon-fri`).
    public static func weekdays(parsing text: String) -> [Weekday]? {
        let lower = text.trimmingCharacters(in: .whitespaces).lowercased()
        if lower == "all" || lower == "every" { return Weekday.allCases }
        let ends = lower.replacingOccurrences(of: "–", with: "-").split(separator: "-")
        guard (1...2).contains(ends.count),
            let first = Weekday(parsing: String(ends[0])),
            let last = Weekday(parsing: String(ends[ends.count - 1])), first <= last
        else { return nil }
        return Weekday.allCases.filter { $0 >= first && $0 <= last }
    }

    /// The local weekday and minute of the day of `instant` in `zone`.
    public static func local(_ instant: Date, in zone: TimeZone) -> (
        day: Weekday, date: String, minute: Int
    ) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents(
            [.year, .month, .day, .hour, .minute, .weekday],
            from: instant
        )
        let date =
            "\(parts.year ?? 0)-" + (parts.month ?? 0 < 10 ? "0" : "") + "\(parts.month ?? 0)-"
            + (parts.day ?? 0 < 10 ? "0" : "") + "\(parts.day ?? 0)"
        return (
            Weekday(calendarWeekday: parts.weekday ?? 2), date,
            (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        )
    }

    /// Whether a slot from `startsAt` to `endsAt` lies within the hours of the local day (in
    /// `zone`, the store's time zone) it starts on.
    public func allows(startsAt: Date, endsAt: Date, in zone: TimeZone) -> Bool {
        let start = Self.local(startsAt, in: zone)
        guard let span = days[start.day], endsAt > startsAt else { return false }
        let end = Self.local(endsAt, in: zone)
        let endMinute: Int
        if end.date == start.date {
            endMinute = end.minute
        } else if end.minute == 0, endsAt.timeIntervalSince(startsAt) <= 86_400 {
            endMinute = 1440  // ends at the following midnight
        } else {
            return false
        }
        return span.contains(from: start.minute, to: endMinute)
    }

    /// The week in short form, days with the same hours grouped:
    /// `Mon–Sat 09:00-20:00, Sun closed`.
    public var description: String {
        var groups: [(first: Weekday, last: Weekday, span: Span?)] = []
        for day in Weekday.allCases {
            if let last = groups.last, last.span == days[day] {
                groups[groups.count - 1].last = day
            } else {
                groups.append((day, day, days[day]))
            }
        }
        return groups.map { group in
            let name =
                group.first == group.last
                ? group.first.shortName : "\(group.first.shortName)–\(group.last.shortName)"
            return "\(name) \(group.span?.description ?? "closed")"
        }.joined(separator: ", ")
    }

    private struct DayKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes the seven days (a missing or null day is closed; unknown keys are ignored).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: DayKey.self)
        var days: [Weekday: Span] = [:]
        for day in Weekday.allCases {
            days[day] = try c.decodeIfPresent(Span.self, forKey: DayKey(stringValue: day.rawValue))
        }
        self.days = days
    }

    /// Encodes all seven days, a closed one as null.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: DayKey.self)
        for day in Weekday.allCases {
            let key = DayKey(stringValue: day.rawValue)
            if let span = days[day] {
                try c.encode(span, forKey: key)
            } else {
                try c.encodeNil(forKey: key)
            }
        }
    }
}

extension ReservationRules {
    /// Checks that a slot lies within `store`'s opening hours (a store without hours takes any
    /// time); the error names `startsAt` and says the hours in the store's local time.
    public static func checkOpeningHours(startsAt: Date, endsAt: Date, store: Store)
        throws(ValidationError)
    {
        guard let hours = store.openingHours else { return }
        let zone = store.resolvedTimeZone
        guard !hours.allows(startsAt: startsAt, endsAt: endsAt, in: zone) else { return }
        let start = OpeningHours.local(startsAt, in: zone)
        let end = OpeningHours.local(endsAt, in: zone)
        let slot =
            "\(start.day.name) \(start.date) \(OpeningHours.Span.clock(start.minute))–"
            + (end.date == start.date ? "" : "\(end.date) ") + OpeningHours.Span.clock(end.minute)
        let that =
            hours.span(on: start.day).map { "open \($0) that day" }
            ?? "closed on \(start.day.name)s"
        throw ValidationError(
            field: "startsAt",
            code: .outOfRange,
            reason:
                "\(slot) is outside the opening hours of \(store.name) (\(that); \(store.timeZone) time: \(hours))"
        )
    }
}
