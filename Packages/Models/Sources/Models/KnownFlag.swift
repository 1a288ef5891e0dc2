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
}
