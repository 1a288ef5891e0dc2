import Foundation
import Models
import Testing

@Suite("README example")
struct ReadmeExampleTests {
    @Test("the README's example runs and prints what it says")
    func example() throws {
        let start = date("2026-12-01T09:00:00Z")
        let store = try Store(
            id: berlinStore,
            name: "Berlin Mitte",
            timeZone: "Europe/Berlin",
            market: "DE",
            region: "DE-BE"
        )
        let customer = try Customer(givenName: "Jana", familyName: "Novák", createdAt: start)
        let configuration = try JSONDecoder.shopfloor.decode(
            ClientConfiguration.self,
            from: Fixture.data("client-configuration")
        )

        let code = try ConfirmationCode("fk6s y95a")
        #expect(code.description == "FK6S-Y95A")
        let gtin = try GTIN("4006381333931")
        #expect(gtin.gtin14 == "04006381333931" && gtin.description == "4006381333931")
        let scan = try GS1ElementString(
            "]d2010950600013435217260200\u{1D}10LOT7",
            referenceYear: 2026
        )
        #expect("\(scan.gtin!) \(scan.expiry!) \(scan.batch!)" == "9506000134352 2026-02-28 LOT7")
        var reservation = try Reservation(
            startsAt: start,
            endsAt: start + 1800,
            storeID: store.id,
            customerID: customer.id,
            partySize: 2,
            topic: "Suit fitting"
        )
        try reservation.transition(to: .confirmed)
        #expect(reservation.version == 2)
        let json = String(decoding: try JSONEncoder.shopfloor.encode(reservation), as: UTF8.self)
        #expect(json.contains(#""status":"confirmed""#))
        let flags = configuration.flags(for: FlagTarget(store: store))
        #expect(flags["expressCheckout"] == .bool(true))
    }
}
