import CommandSupport
import Foundation
import Models
import Testing

/// What a client app receives for a store's day, decoded through the root package the way
/// the apps will: the suite's coders, its version, and the Models rules together.
struct StoreDay: Codable {
    /// A list as the conventions put it on the wire: `{"items": [...], "nextCursor": null}`.
    struct Page<Item: Codable>: Codable {
        var items: [Item]
        var nextCursor: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(items, forKey: .items)
            try container.encode(nextCursor, forKey: .nextCursor)  // null, not omitted
        }
    }

    var store: Store
    var configuration: ClientConfiguration
    var reservations: Page<Reservation>
    var products: [Product]
}

private func fixture(_ name: String) throws -> Data {
    let url = try #require(
        Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures")
    )
    return try Data(contentsOf: url)
}

@Suite("A store's day decoded through the root package")
struct StoreDayTests {
    let day: StoreDay

    init() throws {
        day = try ModelsJSON.makeDecoder().decode(StoreDay.self, from: try fixture("store-day"))
    }

    @Test("The suite's version is a semantic version this configuration accepts")
    func suiteVersionIsAccepted() throws {
        let ours = try SemanticVersion(parsing: SuiteVersion.current)
        #expect(!day.configuration.requiresUpdate(clientVersion: ours))
        #expect(
            day.configuration.requiresUpdate(clientVersion: try SemanticVersion(parsing: "0.0.9"))
        )
    }

    @Test("Flags resolve for this store with store over region over market")
    func flagsResolveForTheStore() async {
        let flags = day.configuration.flags(for: FlagTarget(store: day.store))
        #expect(flags["expressCheckout"] == .bool(true))  // store beats region's false
        #expect(flags["receiptFooter"] == .string("Danke!"))  // market
        #expect(flags["maxPartySize"] == .number(4))  // region
        let elsewhere = day.configuration.flags(for: FlagTarget(market: "FR", region: "FR-IDF"))
        #expect(elsewhere["expressCheckout"] == .bool(false))
        #expect(elsewhere["receiptFooter"] == .string("Thank you!"))
    }

    @Test(
        "A scanned pass finds its reservation and checks it in",
        arguments: [
            "shopfloor://reservations/FK6S-Y95A", "fk6s y95a", "FK6SY95A",
        ]
    )
    func scannedPassChecksIn(payload: String) throws {
        let code = try ConfirmationCode(passPayload: payload)
        var reservation = try #require(day.reservations.items.first { $0.confirmationCode == code })
        #expect(reservation.status == .confirmed)
        try reservation.transition(to: .checkedIn)
        #expect(reservation.status == .checkedIn)
        #expect(reservation.version == 2)
        #expect(throws: Reservation.Status.TransitionError.self) {
            try reservation.transition(to: .confirmed)
        }
    }

    @Test("The whole day round-trips through the suite's coders unchanged")
    func roundTrip() throws {
        let encoded = try ModelsJSON.makeEncoder().encode(day)
        let again = try ModelsJSON.makeDecoder().decode(StoreDay.self, from: encoded)
        #expect(again.store == day.store)
        #expect(again.configuration == day.configuration)
        #expect(again.reservations.items == day.reservations.items)
        #expect(again.products == day.products)
        let text = try #require(String(data: encoded, encoding: .utf8))
        #expect(text.contains(#""gtin":"04006381333931""#))
        #expect(text.contains(#""confirmationCode":"41SJ-3EQ4""#))
        #expect(text.contains(#""nextCursor":null"#))
    }

    @Test("A product with a wrong check digit is rejected, naming the field")
    func badGTINNamesTheField() throws {
        var json = try #require(String(data: try fixture("store-day"), encoding: .utf8))
        json = json.replacingOccurrences(of: "04006381333931", with: "04006381333932")
        #expect {
            try ModelsJSON.makeDecoder().decode(StoreDay.self, from: Data(json.utf8))
        } throws: { error in
            String(describing: error).contains("gtin")
        }
    }
}
