import Foundation
import Models
import Testing

@Suite("JSON fixtures")
struct FixtureTests {
    struct Page<Item: Codable & Equatable>: Codable, Equatable {
        var items: [Item]
        var nextCursor: String?
    }

    struct Catalog: Codable, Equatable {
        var stores: [Store]
        var products: [Product]
        var customers: [Customer]
    }

    @Test("the reservation list decodes despite unknown keys and lenient codes")
    func reservations() throws {
        let page = try JSONDecoder.shopfloor.decode(
            Page<Reservation>.self,
            from: Fixture.data("reservations")
        )
        #expect(page.items.count == 3)
        #expect(page.items[1].confirmationCode.description == "41SJ-3EQ4")
        #expect(page.items[1].status == .checkedIn)
        #expect(RFC3339.string(from: page.items[1].startsAt) == "2026-12-01T09:15:00.250Z")
        #expect(page.items[1].notes?.contains("\n") == true)
        #expect(try roundTrip(page) == page)
        // Encoding is stable: encoding the decoded form twice gives identical bytes.
        let once = try JSONEncoder.shopfloor.encode(page)
        let twice = try JSONEncoder.shopfloor.encode(
            JSONDecoder.shopfloor.decode(Page<Reservation>.self, from: once)
        )
        #expect(once == twice)
    }

    @Test("the catalogue decodes, normalising GTINs, e-mail and phone numbers")
    func catalog() throws {
        let catalog = try JSONDecoder.shopfloor.decode(Catalog.self, from: Fixture.data("catalog"))
        #expect(catalog.stores.map(\.timeZone) == ["Europe/Berlin", "America/Los_Angeles"])
        #expect(
            catalog.products.map(\.gtin.gtin14) == [
                "09506000134352", "04006381333931", "00036000291452",
            ]
        )
        #expect(catalog.products[2].price.amountString == "3.00")
        #expect(catalog.customers[0].email?.value == "jana.novak@example.com")
        #expect(catalog.customers[0].phone?.e164 == "+49301234567")
        #expect(catalog.customers[1].phone?.e164 == "+14155550100")
        #expect(RFC3339.string(from: catalog.customers[1].createdAt) == "2026-11-20T20:00:00.000Z")
        #expect(try roundTrip(catalog) == catalog)
        let json = String(decoding: try JSONEncoder.shopfloor.encode(catalog), as: UTF8.self)
        #expect(
            !json.contains("loyaltyTier") && !json.contains("openingHours")
                && !json.contains("warehouse")
        )
    }
}
