import Foundation
import Models
import Testing

@Suite("store-server API wire types")
struct APITests {
    static let start = date("2026-12-01T09:00:00Z")
    static let customerID = UUID(uuidString: "0B8E3C4D-5A6F-4B7C-9D8E-1F2A3B4C5D6E")!

    static func detail() throws -> ReservationDetail {
        let store = try Store(
            id: berlinStore,
            name: "Berlin Mitte",
            timeZone: "Europe/Berlin",
            market: "DE",
            region: "DE-BE"
        )
        let customer = try Customer(
            id: customerID,
            givenName: "Ana",
            familyName: "Weber",
            email: EmailAddress("ana@example.com"),
            createdAt: start
        )
        let reservation = try Reservation(
            confirmationCode: ConfirmationCode("FK6S-Y95A"),
            startsAt: start,
            endsAt: start + 1800,
            storeID: store.id,
            customerID: customer.id,
            partySize: 2,
            topic: "Suit fitting"
        )
        return try ReservationDetail(reservation: reservation, customer: customer, store: store)
    }

    @Test("a reservation detail is the reservation's keys plus customer and store, and round-trips")
    func detailShape() throws {
        let detail = try Self.detail()
        let data = try JSONEncoder.shopfloor.encode(detail)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["confirmationCode"] as? String == "FK6S-Y95A")
        #expect(object["storeID"] as? String == berlinStore.uuidString)
        #expect((object["customer"] as? [String: Any])?["givenName"] as? String == "Ana")
        #expect((object["store"] as? [String: Any])?["timeZone"] as? String == "Europe/Berlin")
        #expect(try JSONDecoder.shopfloor.decode(ReservationDetail.self, from: data) == detail)
    }

    @Test("a detail whose embedded customer is not the reservation's is rejected, naming the field")
    func detailMismatch() throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder.shopfloor.encode(Self.detail()))
                as? [String: Any]
        )
        object["customerID"] = UUID().uuidString
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: object),
            as: UTF8.self
        )
        let error = try decodeFailure(ReservationDetail.self, json)
        #expect(error.field == "customer.id")
    }

    @Test("a page always writes nextCursor, null on the last page")
    func pageCursor() throws {
        let last = Page(items: [1, 2], nextCursor: nil)
        #expect(
            String(decoding: try JSONEncoder.shopfloor.encode(last), as: UTF8.self)
                == #"{"items":[1,2],"nextCursor":null}"#
        )
        let more = Page(items: ["a"], nextCursor: "abc")
        #expect(try roundTrip(more) == more)
        let missing = try JSONDecoder.shopfloor.decode(
            Page<Int>.self,
            from: Data(#"{"items":[]}"#.utf8)
        )
        #expect(missing.nextCursor == nil)
    }

    static let newReservationCases: [(String, String)] = [
        (
            #""customerID":"0B8E3C4D-5A6F-4B7C-9D8E-1F2A3B4C5D6E","endsAt":"2026-12-01T08:00:00Z""#,
            "endsAt"
        ),
        (#""customerID":"0B8E3C4D-5A6F-4B7C-9D8E-1F2A3B4C5D6E","partySize":0"#, "partySize"),
        (#""customerID":"0B8E3C4D-5A6F-4B7C-9D8E-1F2A3B4C5D6E","topic":" ""#, "topic"),
        (#""customerID":"not-a-uuid""#, "customerID"),
        (#""storeID":"x","customerID":"0B8E3C4D-5A6F-4B7C-9D8E-1F2A3B4C5D6E""#, "storeID"),
        ("", "customerID"),
        (
            #""customerID":"0B8E3C4D-5A6F-4B7C-9D8E-1F2A3B4C5D6E","customer":{"givenName":"A"}"#,
            "customer"
        ),
    ]

    @Test("a new reservation names the broken rule's field", arguments: newReservationCases)
    func newReservationRules(extra: String, field: String) throws {
        var members: [String: String] = [
            "storeID": #""6F1C2B7A-9E0D-4C1B-8A55-2D4E6F708192""#,
            "startsAt": #""2026-12-01T09:00:00Z""#, "endsAt": #""2026-12-01T09:30:00Z""#,
            "partySize": "2", "topic": #""Fitting""#,
        ]
        // Later members of `extra` replace the defaults.
        if !extra.isEmpty {
            let override = try #require(
                try JSONSerialization.jsonObject(with: Data("{\(extra)}".utf8)) as? [String: Any]
            )
            for (key, value) in override {
                let data = try JSONSerialization.data(
                    withJSONObject: value,
                    options: .fragmentsAllowed
                )
                members[key] = String(decoding: data, as: UTF8.self)
            }
        }
        let json = "{" + members.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        let error = try decodeFailure(NewReservation.self, json)
        #expect(error.field == field)
    }

    @Test("a new reservation with form values round-trips")
    func newReservationRoundTrip() throws {
        let request = try NewReservation(
            storeID: berlinStore,
            startsAt: Self.start,
            endsAt: Self.start + 900,
            partySize: 3,
            topic: "Kitchen",
            customer: ["givenName": "Ana", "familyName": "Weber"]
        )
        #expect(try roundTrip(request) == request)
    }

    @Test("reservation changes need at least one field and check the ones given")
    func changes() throws {
        let empty = try decodeFailure(ReservationChanges.self, "{}")
        #expect(empty.code == .empty)
        let party = try decodeFailure(ReservationChanges.self, #"{"partySize": 51}"#)
        #expect(party.field == "partySize")
        let ok = try JSONDecoder.shopfloor.decode(
            ReservationChanges.self,
            from: Data(#"{"notes": "window seat"}"#.utf8)
        )
        #expect(ok.notes == "window seat" && ok.topic == nil)
        #expect(
            String(decoding: try JSONEncoder.shopfloor.encode(ok), as: UTF8.self)
                == #"{"notes":"window seat"}"#
        )
    }

    @Test(
        "an associate checks its user name, leaves out a missing home store and reads an older server's answer as an associate of its home store"
    )
    func associate() throws {
        let ana = try Associate(username: "ana.weber", displayName: "Ana Weber")
        #expect(
            String(decoding: try JSONEncoder.shopfloor.encode(ana), as: UTF8.self)
                == #"{"displayName":"Ana Weber","role":"associate","storeIDs":[],"username":"ana.weber"}"#
        )
        let older = try JSONDecoder.shopfloor.decode(
            Associate.self,
            from: Data(
                #"{"displayName":"Demo","homeStoreID":"\#(berlinStore.uuidString)","username":"demo"}"#
                    .utf8
            )
        )
        #expect(older.role == .associate && older.storeIDs == [berlinStore])
        let admin = try Associate(username: "root", displayName: "Root", role: .admin)
        #expect(try roundTrip(admin) == admin && admin.role.seesEveryStore)
        #expect(throws: ValidationError.self) {
            try Associate(username: "ana weber", displayName: "A")
        }
        let home = try Associate(username: "demo", displayName: "Demo", homeStoreID: berlinStore)
        #expect(try roundTrip(home) == home)
    }

    @Test("the client configuration response round-trips with its resolved flags")
    func configurationResponse() throws {
        let configuration = try JSONDecoder.shopfloor.decode(
            ClientConfiguration.self,
            from: Fixture.data("client-configuration")
        )
        let store = try Store(
            id: berlinStore,
            name: "Berlin",
            timeZone: "Europe/Berlin",
            market: "DE",
            region: "DE-BE"
        )
        let response = ClientConfigurationResponse(
            configuration: configuration,
            store: store,
            flags: configuration.flags(for: FlagTarget(store: store)),
            updateRequired: false
        )
        let back = try roundTrip(response)
        #expect(back == response)
        #expect(back.flags["expressCheckout"] == .bool(true))
    }

    @Test("problem documents carry their extension members and leave out the absent ones")
    func problem() throws {
        let problem = APIProblem(
            type: ProblemType.invalidTransition,
            title: "Status move not allowed",
            status: 409,
            detail: "reservation is already checkedIn",
            from: .checkedIn,
            to: .checkedIn
        )
        let text = String(decoding: try JSONEncoder.shopfloor.encode(problem), as: UTF8.self)
        #expect(text.contains(#""from":"checkedIn""#))
        #expect(!text.contains("errors"))
        #expect(try roundTrip(problem) == problem)
        let field = APIProblem.FieldError(
            ValidationError(field: "partySize", code: .outOfRange, reason: "is 60")
        )
        #expect(field.code == "outOfRange" && field.message == "partySize is 60")
        #expect(ProblemType.notFound == "https://shopfloor.dev/problems/not-found")
    }
}

@Suite("stores' short names")
struct StoreShortNameTests {
    @Test(
        "a store's name becomes a short name people can type",
        arguments: [
            ("Berlin Kurfürstendamm", "berlin-kurfuerstendamm"),
            ("New York Fifth Avenue", "new-york-fifth-avenue"),
            ("  Café Zoë / Größe 2 ", "cafe-zoe-groesse-2"),
            ("東京", "store"),
        ]
    )
    func shortName(name: String, expected: String) {
        #expect(Store.shortName(for: name) == expected)
        #expect(Store.isShortName(expected))
    }

    @Test("only lowercase letters, digits and inner dashes make a short name")
    func shape() {
        for bad in [
            "", "-berlin", "berlin-", "Berlin", "ber lin", String(repeating: "a", count: 65),
        ] {
            #expect(!Store.isShortName(bad), "\(bad)")
        }
        #expect(throws: ValidationError.self) {
            try Store(
                name: "X",
                timeZone: "UTC",
                market: "DE",
                region: "DE-BE",
                shortName: "Not OK"
            )
        }
    }
}
