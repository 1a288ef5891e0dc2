import Foundation
import Models
import Testing

@Suite("The reservation rules, defined once")
struct ReservationRulesTests {
    @Test(
        "only requested and confirmed reservations may be edited; the others are refused naming their status",
        arguments: Reservation.Status.allCases
    )
    func editable(status: Reservation.Status) throws {
        let reservation = try ReservationTests.make(status: status)
        let later = try ReservationChanges(
            startsAt: ReservationTests.start.addingTimeInterval(86_400),
            endsAt: ReservationTests.start.addingTimeInterval(86_400 + 1800)
        )
        if status == .requested || status == .confirmed {
            let moved = try reservation.applying(later)
            #expect(moved.startsAt == later.startsAt && moved.endsAt == later.endsAt)
            #expect(moved.version == reservation.version + 1 && moved.status == status)
        } else {
            #expect(
                throws: ReservationRules.ChangeError.notEditable(
                    ReservationRules.EditRefusal(status: status)
                )
            ) { try reservation.applying(later) }
            let message = ReservationRules.EditRefusal(status: status).description
            #expect(message.contains(status.rawValue) && message.contains("cannot be changed"))
        }
    }

    @Test("a change is checked against the merged reservation: order, party size, store maximum")
    func mergedRules() throws {
        let reservation = try ReservationTests.make(partySize: 2)
        let early = try ReservationChanges(endsAt: ReservationTests.start.addingTimeInterval(-60))
        #expect {
            try reservation.applying(early)
        } throws: { error in
            guard case .invalid(let validation) = error as? ReservationRules.ChangeError else {
                return false
            }
            return validation.field == "endsAt" && validation.code == .invalidOrder
        }
        let six = try ReservationChanges(partySize: 6)
        #expect(try reservation.applying(six).partySize == 6)
        #expect {
            try reservation.applying(six, storeMaximumPartySize: 4)
        } throws: { error in
            guard case .invalid(let validation) = error as? ReservationRules.ChangeError else {
                return false
            }
            return validation.field == "partySize" && validation.reason.contains("maximum of 4")
        }
        // The store maximum applies to a party size change only.
        let topic = try ReservationChanges(topic: "Alterations")
        let big = try ReservationTests.make(partySize: 8)
        #expect(try big.applying(topic, storeMaximumPartySize: 4).topic == "Alterations")
        let cleared = try ReservationChanges(notes: "")
        var noted = reservation
        noted.notes = "window"
        #expect(try noted.applying(cleared).notes == nil)
    }

    @Test("the single rules name their field", arguments: [0, 51])
    func partySize(size: Int) {
        #expect(throws: ValidationError.self) { try ReservationRules.checkPartySize(size) }
        #expect((try? ReservationRules.checkPartySize(size)) == nil)
        #expect(throws: Never.self) { try ReservationRules.checkPartySize(25) }
        #expect(throws: Never.self) { try ReservationRules.checkTopic("Fitting") }
        #expect(throws: ValidationError.self) { try ReservationRules.checkTopic("a\nb") }
        #expect(throws: ValidationError.self) {
            try ReservationRules.checkNotes(String(repeating: "n", count: 2001))
        }
    }
}
