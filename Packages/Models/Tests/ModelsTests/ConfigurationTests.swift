import Foundation
import Models
import Testing

@Suite("Semantic versions")
struct SemanticVersionTests {
    @Test(
        "valid versions parse and print back",
        arguments: [
            "0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7",
            "1.0.0-x.7.z.92",
            "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0-x-y-z.--",
            "18446744073709551615.0.0",
        ]
    )
    func valid(text: String) throws {
        #expect(try SemanticVersion(parsing: text).description == text)
    }

    @Test(
        "invalid versions are rejected",
        arguments: [
            "", "1", "1.2", "1.2.3.4", "v1.2.3", "01.2.3", "1.02.3", "1.2.03", "1.2.3-", "1.2.3-01",
            "1.2.3-a..b",
            "1.2.3+", "1.2.3+a..b", "1.2.3-a_b", " 1.2.3", "1.2.-3", "18446744073709551616.0.0",
            "1.2.3-ü",
        ]
    )
    func invalid(text: String) {
        #expect(throws: ValidationError.self) { try SemanticVersion(parsing: text) }
    }

    @Test("precedence follows semver 2.0 section 11")
    func precedence() throws {
        let ordered = [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "1.10.0", "2.0.0",
        ]
        let versions = try ordered.map { try SemanticVersion(parsing: $0) }
        for i in versions.indices {
            for j in versions.indices {
                #expect((versions[i] < versions[j]) == (i < j), "\(ordered[i]) vs \(ordered[j])")
            }
        }
        #expect(versions.shuffled().sorted() == versions)
    }

    @Test("build metadata is ignored for precedence and equality")
    func build() throws {
        let a = try SemanticVersion(parsing: "1.0.0+a")
        let b = try SemanticVersion(parsing: "1.0.0+b")
        #expect(a == b)
        #expect(!(a < b) && !(b < a))
        #expect(Set([a, b]).count == 1)
        #expect(a.description == "1.0.0+a")
    }

    @Test("JSON holds the string")
    func json() throws {
        let version = try SemanticVersion(parsing: "1.4.0-rc.2+build.7")
        #expect(
            String(decoding: try JSONEncoder.shopfloor.encode([version]), as: UTF8.self)
                == #"["1.4.0-rc.2+build.7"]"#
        )
        #expect(try roundTrip(version).description == version.description)
        #expect(try decodeFailure([SemanticVersion].self, #"["1.4"]"#).field == "0")
    }
}

@Suite("Client configuration")
struct ClientConfigurationTests {
    static func load() throws -> ClientConfiguration {
        try JSONDecoder.shopfloor.decode(
            ClientConfiguration.self,
            from: Fixture.data("client-configuration")
        )
    }

    @Test(
        "flags resolve store > region > market > default",
        arguments: [
            // The store override wins over the region's.
            (berlinStore as UUID?, "DE" as String?, "DE-BE" as String?, true),
            (UUID(), "DE", "DE-BE", false),  // region override wins over market
            (UUID(), "DE", "DE-HH", true),  // market override
            (UUID(), "FR", "FR-IDF", false),  // default
            (nil, nil, nil, false),  // global
            (berlinStore, nil, nil, true),  // store alone
            (nil, "DE", nil, true),
            (nil, "DE", "DE-BE", false),
        ]
    )
    func precedence(store: UUID?, market: String?, region: String?, expected: Bool) throws {
        let configuration = try Self.load()
        #expect(
            configuration.value(
                of: "expressCheckout",
                for: FlagTarget(storeID: store, market: market, region: region)
            ) == .bool(expected)
        )
        #expect(
            configuration.flags(for: store, market: market, region: region)["expressCheckout"]
                == .bool(expected)
        )
    }

    @Test("string and number flags resolve the same way")
    func otherTypes() throws {
        let configuration = try Self.load()
        let store = try Store(
            id: sfStore,
            name: "SF",
            timeZone: "America/Los_Angeles",
            market: "US",
            region: "US-CA"
        )
        let flags = configuration.flags(for: FlagTarget(store: store))
        #expect(flags["receiptFooter"] == .string("Thank you!"))
        #expect(flags["maxPartySize"] == .number(8))
        #expect(configuration.flags(for: .global)["maxPartySize"] == .number(6))
        #expect(
            configuration.flags(for: FlagTarget(market: "DE"))["receiptFooter"] == .string("Danke!")
        )
        #expect(configuration.value(of: "missing", for: .global) == nil)
        #expect(configuration.isEnabled("expressCheckout", for: FlagTarget(storeID: berlinStore)))
        #expect(!configuration.isEnabled("receiptFooter", for: .global))
    }

    @Test(
        "the client update check uses semver precedence",
        arguments: [
            ("1.3.9", true), ("1.4.0-rc.1", true), ("1.4.0-rc.2", false), ("1.4.0", false),
            ("2.0.0", false),
        ]
    )
    func updateCheck(client: String, required: Bool) throws {
        #expect(
            try Self.load().requiresUpdate(clientVersion: SemanticVersion(parsing: client))
                == required
        )
    }

    @Test("a configuration round-trips through JSON")
    func roundTripConfiguration() throws {
        let configuration = try Self.load()
        #expect(try roundTrip(configuration) == configuration)
        #expect(configuration.customerFormFields.count == 8)
        #expect(configuration.featureFlags.count == 4)
    }

    static let base = #"{"configVersion":"1.0.0","minimumClientVersion":"1.0.0","#

    @Test(
        "bad configurations are rejected naming the field",
        arguments: [
            (
                #""featureFlags":{"a":{"defaultValue":true,"markets":{"DE":"yes"}}}}"#,
                "featureFlags.a.markets.DE"
            ),
            (
                #""featureFlags":{"a":{"defaultValue":1,"regions":{"DE-BE":false}}}}"#,
                "featureFlags.a.regions.DE-BE"
            ),
            (
                #""featureFlags":{"a":{"defaultValue":true,"stores":{"not-a-uuid":false}}}}"#,
                "featureFlags.a.stores.not-a-uuid"
            ),
            (
                #""featureFlags":{"a":{"defaultValue":true,"markets":{"D E":false}}}}"#,
                "featureFlags.a.markets.D E"
            ),
            (#""featureFlags":{"1a":{"defaultValue":true}}}"#, "featureFlags.1a"),
            (
                #""customerFormFields":[{"name":"zip","label":"ZIP","kind":"text","pattern":"[0-9"}]}"#,
                "customerFormFields.0.pattern"
            ),
            (
                #""customerFormFields":[{"name":"zip","label":"ZIP","kind":"postcode"}]}"#,
                "customerFormFields.0.kind"
            ),
            (
                #""customerFormFields":[{"name":"a","label":"A","kind":"choice"}]}"#,
                "customerFormFields.0.options"
            ),
            (
                #""customerFormFields":[{"name":"a","label":"A","kind":"text","options":["x"]}]}"#,
                "customerFormFields.0.options"
            ),
            (
                #""customerFormFields":[{"name":"a","label":"A","kind":"text"},{"name":"a","label":"B","kind":"text"}]}"#,
                "customerFormFields.1.name"
            ),
            (
                #""customerFormFields":[{"name":"a b","label":"A","kind":"text"}]}"#,
                "customerFormFields.0.name"
            ),
            (
                #""customerFormFields":[{"name":"a","label":"","kind":"text"}]}"#,
                "customerFormFields.0.label"
            ),
            (
                #""customerFormFields":[{"name":"a","label":"A","kind":"text","maxLength":0}]}"#,
                "customerFormFields.0.maxLength"
            ),
        ]
    )
    func rejects(tail: String, field: String) throws {
        let error = try decodeFailure(ClientConfiguration.self, Self.base + tail)
        #expect(error.field == field)
    }

    @Test("a bad version is rejected naming the field")
    func badVersion() throws {
        let error = try decodeFailure(
            ClientConfiguration.self,
            #"{"configVersion":"1.0","minimumClientVersion":"1.0.0"}"#
        )
        #expect(error.field == "configVersion")
    }

    @Test(
        "form validation reports every problem with a typed code",
        arguments: [
            (
                [
                    "givenName": "Jana", "familyName": "Novák", "email": "jana@example.com",
                    "contactBy": "email",
                ], [] as [String]
            ),
            (
                ["familyName": "Novák", "email": "jana@example.com", "contactBy": "email"],
                ["givenName:missing"]
            ),
            (
                ["givenName": "  ", "familyName": "N", "email": "x", "contactBy": "fax"],
                ["givenName:missing", "email:invalidEmail", "contactBy:notAnOption"]
            ),
            (
                [
                    "givenName": "J", "familyName": "N", "email": "j@e.de", "contactBy": "none",
                    "postcode": "1234",
                ], ["postcode:patternMismatch"]
            ),
            (
                [
                    "givenName": "J", "familyName": "N", "email": "j@e.de", "contactBy": "none",
                    "postcode": "10115x",
                ], ["postcode:patternMismatch"]
            ),
            (
                [
                    "givenName": "J", "familyName": "N", "email": "j@e.de", "contactBy": "none",
                    "birthday": "2026-02-30",
                ], ["birthday:invalidDate"]
            ),
            (
                [
                    "givenName": "J", "familyName": "N", "email": "j@e.de", "contactBy": "none",
                    "phone": "555",
                ], ["phone:invalidPhone"]
            ),
            (
                [
                    "givenName": "J", "familyName": "N", "email": "j@e.de", "contactBy": "none",
                    "newsletter": "yes",
                ], ["newsletter:invalidBoolean"]
            ),
            (
                [
                    "givenName": String(repeating: "J", count: 201), "familyName": "N",
                    "email": "j@e.de", "contactBy": "none",
                ], ["givenName:tooLong"]
            ),
            (
                [
                    "givenName": "J\nK", "familyName": "N", "email": "j@e.de", "contactBy": "none",
                    "shoeSize": "42",
                ], ["givenName:invalidText", "shoeSize:unknownField"]
            ),
        ]
    )
    func form(values: [String: String], expected: [String]) throws {
        let result = try Self.load().validate(form: values, defaultCallingCode: 49)
        #expect(result.errors.map { "\($0.field):\($0.code.rawValue)" } == expected)
        #expect(result.isValid == expected.isEmpty)
    }

    @Test("form validation returns cleaned values")
    func cleaned() throws {
        let result = try Self.load().validate(
            form: [
                "givenName": " Jana ", "familyName": "Novák", "email": "Jana@Example.COM",
                "contactBy": "phone",
                "phone": "030 1234567", "postcode": "10115", "birthday": "1990-05-17",
                "newsletter": "true",
            ],
            defaultCallingCode: 49
        )
        #expect(result.isValid)
        #expect(result.values["givenName"] == "Jana")
        #expect(result.values["email"] == "Jana@example.com")
        #expect(result.values["phone"] == "+49301234567")
        #expect(result.values["postcode"] == "10115")
    }
}

@Suite("Stores and products")
struct CatalogTests {
    @Test(
        "store rules",
        arguments: [
            ("Berlin", "Europe/Berlin", "DE", "DE-BE", nil as String?),
            ("Tokyo", "Asia/Tokyo", "JP", "JP-13", nil),
            ("HQ", "UTC", "GLOBAL", "ALL", nil),
            ("X", "Mars/Olympus", "DE", "DE-BE", "timeZone"),
            ("X", "GMT+2", "DE", "DE-BE", "timeZone"),
            ("X", "europe berlin", "DE", "DE-BE", "timeZone"),
            ("X", "", "DE", "DE-BE", "timeZone"),
            ("", "Europe/Berlin", "DE", "DE-BE", "name"),
            ("X", "Europe/Berlin", "", "DE-BE", "market"),
            ("X", "Europe/Berlin", "DE", "DE BE", "region"),
            (String(repeating: "n", count: 201), "Europe/Berlin", "DE", "DE-BE", "name"),
        ]
    )
    func stores(name: String, zone: String, market: String, region: String, badField: String?)
        throws
    {
        if let badField {
            #expect {
                try Store(name: name, timeZone: zone, market: market, region: region)
            } throws: { error in
                (error as? ValidationError)?.field == badField
            }
        } else {
            let store = try Store(name: name, timeZone: zone, market: market, region: region)
            #expect(store.resolvedTimeZone == TimeZone(identifier: zone))
            #expect(try roundTrip(store) == store)
        }
    }

    @Test(
        "product rules",
        arguments: [
            ("SKU-1", "Shirt", nil as String?, nil as String?),
            ("", "Shirt", nil, "sku"),
            ("SKU 1", "Shirt", nil, "sku"),
            (String(repeating: "S", count: 65), "Shirt", nil, "sku"),
            ("SKU-1", "", nil, "title"),
            ("SKU-1", String(repeating: "t", count: 201), nil, "title"),
            ("SKU-1", "Shirt", "https://img.example.com/a b.jpg", "imageReference"),
        ]
    )
    func products(sku: String, title: String, image: String?, badField: String?) throws {
        let make = { () throws -> Product in
            try Product(
                gtin: GTIN("4006381333931"),
                sku: sku,
                title: title,
                price: Money(amount: "9.99", currency: .eur),
                imageReference: image
            )
        }
        if let badField {
            #expect { try make() } throws: { ($0 as? ValidationError)?.field == badField }
        } else {
            let product = try make()
            #expect(try roundTrip(product) == product)
        }
    }

    @Test("product JSON uses the 14-digit GTIN and the money object")
    func productJSON() throws {
        let product = try Product(
            gtin: GTIN("96385074"),
            sku: "A1",
            title: "Pen",
            brand: "Acme",
            status: .recalled,
            price: Money(amount: "2.5", currency: .eur),
            imageReference: "images/pen.jpg"
        )
        let json = String(decoding: try JSONEncoder.shopfloor.encode(product), as: UTF8.self)
        #expect(
            json
                == #"{"brand":"Acme","gtin":"00000096385074","imageReference":"images/pen.jpg","price":{"amount":"2.50","currency":"EUR"},"sku":"A1","status":"recalled","title":"Pen"}"#
        )
        let badPrice = json.replacingOccurrences(
            of: #""currency":"EUR""#,
            with: #""currency":"EURO""#
        )
        #expect(try decodeFailure(Product.self, badPrice).field == "price.currency")
        let badGTIN = json.replacingOccurrences(of: "00000096385074", with: "00000096385075")
        let error = try decodeFailure(Product.self, badGTIN)
        #expect(error.field == "gtin" && error.code == .invalidCheckDigit)
        let badStatus = json.replacingOccurrences(of: "recalled", with: "sold")
        #expect(try decodeFailure(Product.self, badStatus).field == "status")
    }
}
