public import Foundation

/// The time the apps judge dates and times by: what `today`, `tomorrow 10:00` or `+2h` mean,
/// whether a start is in the past, which reservations are upcoming, which day the demo data is
/// built around. It is this machine's clock; tests fix it with `SHOPFLOOR_TEST_NOW` (an RFC 3339
/// instant), for the client apps and `store-server` alike, so that a booking test means the
/// same day whenever it runs. Signatures, token lifetimes and cache ages keep the real clock.
public enum TestClock {
    /// The environment variable that fixes the time, for tests only.
    public static let variable = "SHOPFLOOR_TEST_NOW"

    /// The fixed instant when `SHOPFLOOR_TEST_NOW` holds one, else nil.
    public static let fixed: Date? = {
        guard let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty else {
            return nil
        }
        return ISO8601DateFormatter().date(from: text)
    }()

    /// The fixed instant, else this machine's clock.
    public static func now() -> Date { fixed ?? Date() }
}
