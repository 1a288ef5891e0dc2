import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import Models

/// Dates and times typed by people: store wall-clock times, relative times and calendar days.
enum TimeInput {
    /// The forms a time may be typed in, for messages and help.
    static let forms =
        "'tomorrow 10:00', 'today 15:00', 'friday 9:30', '+2h', '2025-06-01 10:30' (store time) or RFC 3339"

    /// An instant typed by a person, in `zone` (the store's time zone):
    /// - RFC 3339 (`2025-06-01T10:30:00+02:00`, `…Z`);
    /// - a wall-clock date and time (`2025-06-01 10:30`, `2025-06-01T10:30`, seconds optional);
    /// - a day word and a time: `today 15:00`, `tomorrow 10:00`, or a weekday (`friday 9:30`,
    ///   `fri 9:30`: its next occurrence, today when the time is still ahead); a time alone
    ///   (`15:00`) is today;
    /// - `now`, or a span from now: `+2h`, `+90m`, `+1h30m`, `+1d`.
    /// - Throws: `ValidationError` naming `option` and the accepted forms.
    static func instant(
        _ text: String,
        in zone: TimeZone,
        now: Date = TestClock.now(),
        option: String
    )
        throws -> Date
    {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = try? RFC3339.date(from: trimmed) { return date }
        let lower = trimmed.lowercased()
        if lower == "now" { return now }
        if lower.hasPrefix("+") {
            guard let span = span(String(lower.dropFirst())) else {
                throw ValidationError(
                    "\(option) '\(text)' is not a span from now: use +2h, +90m, +1h30m or +1d"
                )
            }
            return now.addingTimeInterval(span)
        }
        let normalized = trimmed.replacingOccurrences(of: "T", with: " ")
        let parts = normalized.split(separator: " ", omittingEmptySubsequences: true)
        let dayText = parts.count == 2 ? String(parts[0]) : parts.count == 1 ? "today" : ""
        let clockText =
            parts.count == 2 ? String(parts[1]) : parts.count == 1 ? String(parts[0]) : ""
        guard let (hour, minute, second) = clock(clockText) else {
            throw ValidationError(
                parts.count == 2 && (civil(dayText) != nil || relativeDay(dayText) != nil)
                    ? "\(option) '\(text)' has no valid time of day (HH:MM)"
                    : "\(option) '\(text)' is not a time: use \(forms)"
            )
        }
        let secondOfDay = Int64(hour * 3_600 + minute * 60 + second)
        if let day = civil(dayText) {
            return wallInstant(days: days(day), secondOfDay: secondOfDay, in: zone)
        }
        guard let relative = relativeDay(dayText) else {
            throw ValidationError("\(option) '\(text)' is not a time: use \(forms)")
        }
        let today = days(civil(Output.wallClock(now, zone).date)!)
        switch relative {
        case .offset(let shift):
            return wallInstant(days: today + Int64(shift), secondOfDay: secondOfDay, in: zone)
        case .weekday(let wanted):
            // 1970-01-01 was a Thursday (weekday 4, Sunday 0).
            let weekday = Int(((today % 7) + 7 + 4) % 7)
            var ahead = Int64((wanted - weekday + 7) % 7)
            if ahead == 0,
                wallInstant(days: today, secondOfDay: secondOfDay, in: zone) <= now
            {
                ahead = 7
            }
            return wallInstant(days: today + ahead, secondOfDay: secondOfDay, in: zone)
        }
    }

    /// A day word: `today`, `tomorrow`, `yesterday`, or a weekday (full or three letters).
    enum RelativeDay: Equatable {
        case offset(Int)
        /// 0 Sunday … 6 Saturday.
        case weekday(Int)
    }

    static func relativeDay(_ word: String) -> RelativeDay? {
        switch word.lowercased() {
        case "today": return .offset(0)
        case "tomorrow": return .offset(1)
        case "yesterday": return .offset(-1)
        default: break
        }
        let names = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
        let lower = word.lowercased()
        guard lower.count >= 3,
            let index = names.firstIndex(where: { $0 == lower || $0.hasPrefix(lower) })
        else { return nil }
        return .weekday(index)
    }

    /// `HH:MM` or `HH:MM:SS` (also `9:30`).
    static func clock(_ text: String) -> (Int, Int, Int)? {
        let clock = text.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        guard (2...3).contains(clock.count), clock.allSatisfy({ $0 != nil }),
            let hour = clock[0], let minute = clock[1], (0..<24).contains(hour),
            (0..<60).contains(minute), clock.count == 2 || (0..<60).contains(clock[2]!)
        else { return nil }
        return (hour, minute, clock.count == 3 ? clock[2]! : 0)
    }

    /// `2h`, `90m`, `1h30m`, `1d`, `45s` in seconds.
    static func span(_ text: String) -> TimeInterval? {
        var total = 0.0
        var number = ""
        var sawUnit = false
        for character in text {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            guard let value = Double(number) else { return nil }
            switch character {
            case "d": total += value * 86_400
            case "h": total += value * 3_600
            case "m": total += value * 60
            case "s": total += value
            default: return nil
            }
            number = ""
            sawUnit = true
        }
        guard number.isEmpty, sawUnit, total > 0 else { return nil }
        return total
    }

    /// The instant of a wall-clock time in `zone`, with its offset found in two steps
    /// (exact outside DST changes).
    static func wallInstant(days: Int64, secondOfDay: Int64, in zone: TimeZone) -> Date {
        let wall = Double(days * 86_400 + secondOfDay)
        let first = Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall)))
        let offset = Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - first)))
        return Date(timeIntervalSince1970: wall - offset)
    }

    /// `2026-11-27 14:05` in `zone`.
    static func wall(_ instant: Date, in zone: TimeZone) -> String {
        let clock = Output.wallClock(instant, zone)
        return "\(clock.date) \(clock.time)"
    }

    /// A calendar day in `zone`: `today`, `tomorrow`, `yesterday`, a weekday (`friday`: the
    /// next one, today on a Friday) or `YYYY-MM-DD`.
    static func day(_ text: String, in zone: TimeZone, now: Date = TestClock.now(), option: String)
        throws
        -> String
    {
        if civil(text) != nil { return text }
        guard let relative = relativeDay(text) else {
            throw ValidationError(
                "\(option) '\(text)' is not a day: use today, tomorrow, yesterday, a weekday or YYYY-MM-DD"
            )
        }
        let today = days(civil(Output.wallClock(now, zone).date)!)
        let target: Int64
        switch relative {
        case .offset(let shift): target = today + Int64(shift)
        case .weekday(let wanted):
            let weekday = Int(((today % 7) + 7 + 4) % 7)
            target = today + Int64((wanted - weekday + 7) % 7)
        }
        let (year, month, day) = Output.civil(fromDays: target)
        return String(format: "%04d-%02d-%02d", year, month, day)
    }

    /// Year, month and day of a valid `YYYY-MM-DD`.
    static func civil(_ text: String) -> (Int64, Int64, Int64)? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int64(parts[0]), let month = Int64(parts[1]), let day = Int64(parts[2]),
            (1...12).contains(month), day >= 1
        else { return nil }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let lengths: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= lengths[Int(month - 1)] else { return nil }
        return (year, month, day)
    }

    /// Howard Hinnant's days_from_civil.
    static func days(_ date: (Int64, Int64, Int64)) -> Int64 {
        let (y0, m, d) = date
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
