public import Foundation

extension ReservationDetail {
    /// The order of reservation lists (the server's search, a client's partial list from kept
    /// data): upcoming first, meaning not yet over at `now`, by start (nearest first); then the
    /// past ones by start, most recent first; ties by id.
    public static func upcomingFirst(now: Date)
        -> @Sendable (ReservationDetail, ReservationDetail)
        -> Bool
    {
        { lhs, rhs in
            func key(_ detail: ReservationDetail) -> (Int, Double, String) {
                let upcoming = detail.reservation.endsAt > now
                let start = detail.reservation.startsAt.timeIntervalSince1970
                return (upcoming ? 0 : 1, upcoming ? start : -start, detail.id.uuidString)
            }
            return key(lhs) < key(rhs)
        }
    }
}
