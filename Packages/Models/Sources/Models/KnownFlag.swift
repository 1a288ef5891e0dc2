/// The flags of the suite's client configuration, with their defaults: the server enforces
/// them and the clients read them by these names. A name not listed here is refused by the
/// server's administration (`store-server config set-flag`).
public enum KnownFlag {
    /// Check-ins allowed (bool, default true).
    public static let checkInEnabled = "checkInEnabled"
    /// New reservations allowed (bool, default true).
    public static let newReservationsEnabled = "newReservationsEnabled"
    /// Cancellations allowed (bool, default true).
    public static let cancellationEnabled = "cancellationEnabled"
    /// Largest party a new or changed reservation may have (number, default 50).
    public static let maxPartySize = "maxPartySize"
    /// Slot length clients offer, in minutes (number, default 30).
    public static let reservationSlotMinutes = "reservationSlotMinutes"
    /// A notice clients show for the store (string, default empty).
    public static let storeNotice = "storeNotice"

    /// Every known flag and its default.
    public static let defaults: [String: FlagValue] = [
        checkInEnabled: .bool(true),
        newReservationsEnabled: .bool(true),
        cancellationEnabled: .bool(true),
        maxPartySize: .number(Double(ModelLimits.partySize.upperBound)),
        reservationSlotMinutes: .number(30),
        storeNotice: .string(""),
    ]
}

extension KnownFlag {
    /// The known flag names, sorted.
    public static var names: [String] { defaults.keys.sorted() }

    /// ` (did you mean NAME?)` when `name` differs from a known flag only in case or by one
    /// edit, else empty: for the error that refuses an unknown name.
    public static func suggestion(for name: String) -> String {
        let lowered = name.lowercased()
        let close = names.first { known in
            let other = known.lowercased()
            if other == lowered { return true }
            let (a, b) = (Array(other), Array(lowered))
            guard abs(a.count - b.count) <= 1 else { return false }
            // One substitution, insertion or deletion.
            var (i, j, edits) = (0, 0, 0)
            while i < a.count, j < b.count {
                if a[i] == b[j] {
                    i += 1
                    j += 1
                    continue
                }
                edits += 1
                if edits > 1 { return false }
                if a.count > b.count {
                    i += 1
                } else if a.count < b.count {
                    j += 1
                } else {
                    i += 1
                    j += 1
                }
            }
            return edits + (a.count - i) + (b.count - j) <= 1
        }
        return close.map { " (did you mean \($0)?)" } ?? ""
    }
}
