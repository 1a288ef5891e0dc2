import ArgumentParser
import ClientCommands
import Foundation
import Models

/// Dates and times typed by people: store wall-clock times and calendar days.
enum TimeInput {
    /// An instant from RFC 3339 (`2025-06-01T10:30:00+02:00`, `…Z`) or a wall-clock time in
    /// `zone` (`2025-06-01 10:30`, `2025-06-01T10:30`, seconds optional).
    /// - Throws: `ValidationError` naming `option` and the accepted forms.
    static func instant(_ text: String, in zone: TimeZone, option: String) throws -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = try? RFC3339.date(from: trimmed) { return date }
        let normalized = trimmed.replacingOccurrences(of: "T", with: " ")
        let parts = normalized.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, let day = civil(String(parts[0])) else {
            throw ValidationError(
                "\(option) '\(text)' is not a time: use 'YYYY-MM-DD HH:MM' (store time) or RFC 3339 such as 2025-06-01T10:30:00+02:00"
            )
        }
        let clock = parts[1].split(separator: ":").map { Int($0) }
        guard (2...3).contains(clock.count), clock.allSatisfy({ $0 != nil }),
            let hour = clock[0], let minute = clock[1], (0..<24).contains(hour),
            (0..<60).contains(minute), clock.count == 2 || (0..<60).contains(clock[2]!)
        else {
            throw ValidationError("\(option) '\(text)' has no valid time of day (HH:MM)")
        }
        let second = clock.count == 3 ? clock[2]! : 0
        let wall = Double(days(day) * 86_400 + Int64(hour * 3_600 + minute * 60 + second))
        // The offset at the wall time itself, found in two steps (exact outside DST changes).
        let first = Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall)))
        let offset = Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - first)))
        return Date(timeIntervalSince1970: wall - offset)
    }

    /// A calendar day: `today`, `tomorrow`, `yesterday` (in `zone`) or `YYYY-MM-DD`.
    static func day(_ text: String, in zone: TimeZone, now: Date = Date(), option: String) throws
        -> String
    {
        let shift: Int
        switch text.lowercased() {
        case "today": shift = 0
        case "tomorrow": shift = 1
        case "yesterday": shift = -1
        default:
            guard civil(text) != nil else {
                throw ValidationError(
                    "\(option) '\(text)' is not a day: use today, tomorrow, yesterday or YYYY-MM-DD"
                )
            }
            return text
        }
        let moment = now.addingTimeInterval(Double(shift * 86_400))
        return Output.wallClock(moment, zone).date
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
