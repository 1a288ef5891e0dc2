import CommandSupport
import Foundation

/// The one time every integration test runs at: the demo data is seeded around its day, the
/// server and the client apps judge "now" by it (`SHOPFLOOR_TEST_NOW`), so `tomorrow 10:00`,
/// `+3h` and `list --date today` mean the same whenever the tests run. A Wednesday, 09:00 in
/// Berlin (the demo associate's store), inside every demo store's opening hours the day after.
enum FixedClock {
    /// 2026-12-02T08:00:00Z, a Wednesday.
    static let text = "2026-12-02T08:00:00Z"
    /// The fixed instant.
    static let now = ISO8601DateFormatter().date(from: text)!

    /// `environment` with the fixed clock set.
    static func applied(to environment: [String: String]) -> [String: String] {
        var environment = environment
        environment[TestClock.variable] = text
        return environment
    }
}
