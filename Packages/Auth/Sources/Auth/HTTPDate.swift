public import Foundation

/// HTTP dates (RFC 9110 §5.6.7) without `DateFormatter`: formats IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`) and parses all three forms a recipient must accept:
/// IMF-fixdate, the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and ANSI C's
/// asctime() form (`Sun Nov  6 08:49:37 1994`).
public enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let longDays = [
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    ]
    private static let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// Formats a time (whole seconds) as IMF-fixdate.
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let day = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - day * 86_400
        let (year, month, dayOfMonth) = civil(fromDays: day)
        let weekday = days[Int(((day % 7) + 7) % 7)]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(weekday), \(two(dayOfMonth)) \(months[Int(month - 1)]) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Parses an HTTP date in any of its three forms; `nil` for anything else.
    ///
    /// RFC 850's two-digit year is read as the year in the past 50 years' window that ends
    /// 50 years after `now`'s (RFC 9110: a year that appears more than 50 years in the
    /// future is taken as the most recent past year with the same last two digits).
    public static func parse(_ text: String, now: Date = Date()) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        if parts.count == 6, parts[0].hasSuffix(","), parts[0].count == 4, parts[5] == "GMT" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard days.contains(String(parts[0].dropLast())), parts[1].count == 2,
                parts[3].count == 4, let year = number(parts[3])
            else { return nil }
            return make(year: year, month: parts[2], day: parts[1], time: parts[4])
        }
        if parts.count == 4, parts[0].hasSuffix(","), parts[3] == "GMT" {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            guard longDays.contains(String(parts[0].dropLast())) else { return nil }
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false)
            guard date.count == 3, date[0].count == 2, date[2].count == 2,
                let shortYear = number(date[2])
            else { return nil }
            let currentYear = civil(fromDays: Int64(now.timeIntervalSince1970) / 86_400).0
            var year = currentYear - currentYear % 100 + shortYear
            if year > currentYear + 50 { year -= 100 }
            return make(year: year, month: date[1], day: date[0], time: parts[2])
        }
        if parts.count == 5, parts[0].count == 3, days.contains(String(parts[0])) {
            // asctime: Sun Nov  6 08:49:37 1994 (day padded with a space)
            guard parts[2].count <= 2, parts[4].count == 4, let year = number(parts[4]) else {
                return nil
            }
            return make(year: year, month: parts[1], day: parts[2], time: parts[3])
        }
        return nil
    }

    private static func make(
        year: Int64,
        month monthName: Substring,
        day dayText: Substring,
        time timeText: Substring
    ) -> Date? {
        guard (1970...9999).contains(year),
            let monthIndex = months.firstIndex(of: String(monthName)),
            let day = number(dayText), (1...31).contains(day)
        else { return nil }
        let time = timeText.split(separator: ":", omittingEmptySubsequences: false)
        guard time.count == 3, time.allSatisfy({ $0.count == 2 }),
            let hour = number(time[0]), let minute = number(time[1]), let second = number(time[2]),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = daysFromCivil(year: year, month: Int64(monthIndex + 1), day: day)
        return Date(
            timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second)
        )
    }

    /// A run of ASCII digits as a number (no sign, no spaces).
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 4,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return Int64(text)
    }

    // Howard Hinnant's civil-date algorithms.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
