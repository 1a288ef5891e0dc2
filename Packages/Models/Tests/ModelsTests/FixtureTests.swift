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
            !json.contains("loyaltyTier") && !json.contains("parkingLevels")
                && !json.contains("warehouse")
        )
    }

    @Test(
        "oversized or blank strings in a fixture are rejected naming the item and field",
        arguments: [
            (
                #""givenName": "Jana""#, #""givenName": "\#(String(repeating: "J", count: 201))""#,
                "customers.0.givenName"
            ),
            (
                #""note": "Prefers morning slots.""#,
                #""note": "\#(String(repeating: "n", count: 2001))""#, "customers.0.note"
            ),
            (#""familyName": "Lee""#, #""familyName": " ""#, "customers.1.familyName"),
            (#""email": "jana.novak@Example.COM""#, #""email": "jana.novak""#, "customers.0.email"),
            (#""phone": "+1 (415) 555-0100""#, #""phone": "(415) 555-0100""#, "customers.1.phone"),
            (
                #""title": "Highlighter""#, #""title": "\#(String(repeating: "H", count: 201))""#,
                "products.1.title"
            ),
            (#""gtin": "036000291452""#, #""gtin": "036000291453""#, "products.2.gtin"),
            (#""amount": "3""#, #""amount": "3.001""#, "products.2.price.amount"),
            (
                #""timeZone": "Europe/Berlin""#, #""timeZone": "Europe/Atlantis""#,
                "stores.0.timeZone"
            ),
            (
                #""updatedAt": "2026-11-02T17:45:12.5Z""#, #""updatedAt": "2025-03-14T08:29:59Z""#,
                "customers.0.updatedAt"
            ),
        ]
    )
    func catalogErrors(original: String, replacement: String, field: String) throws {
        let text = String(decoding: try Fixture.data("catalog"), as: UTF8.self)
        #expect(text.contains(original))
        let error = try decodeFailure(
            Catalog.self,
            text.replacingOccurrences(of: original, with: replacement)
        )
        #expect(error.field == field)
    }
}
