internal import Auth
public import Foundation
public import Logging
internal import Models
internal import PNG
internal import SQLKit

/// What `seed --demo` loaded.
public struct DemoSummary: Sendable, Equatable {
    /// Stores, customers, reservations, products and users added.
    public var stores = 0, customers = 0, reservations = 0, products = 0, users = 0
    /// False when the database already had stores and nothing was added.
    public var loaded = false
}

/// The deterministic demo data set: 3 markets, 6 stores in 6 time zones with opening hours
/// (Berlin closed on Sundays), 200 customers, 1,000 reservations within those hours over the
/// 7 days before and after today (UTC; a closed day's move to the day before), 500 products with valid
/// GTIN-13s and generated 96×96 PNG images, the associate `demo` / `shopfloor-demo`, and
/// flags that differ by market, region and store. The same day gives the same data.
public enum DemoData {
    /// The demo associate (of the Berlin store).
    public static let username = "demo"
    /// The demo users' password (demo data only).
    public static let password = "shopfloor-demo"
    /// The demo manager (of the New York and Chicago stores).
    public static let managerUsername = "demo-manager"
    /// The demo administrator (every store).
    public static let adminUsername = "demo-admin"

    struct StoreSeed {
        var id: String, name: String, timeZone: String, market: String, region: String,
            callingCode: Int
        /// Monday … Sunday: `HH:MM-HH:MM` or `closed`.
        var hours: [String]
    }

    static let americanHours = Array(repeating: "09:00-21:00", count: 6) + ["10:00-19:00"]

    static let storeSeeds: [StoreSeed] = [
        StoreSeed(
            id: "5D0F1C2A-0001-4A00-8000-000000000001",
            name: "New York Fifth Avenue",
            timeZone: "America/New_York",
            market: "US",
            region: "US-NY",
            callingCode: 1,
            hours: americanHours
        ),
        StoreSeed(
            id: "5D0F1C2A-0002-4A00-8000-000000000002",
            name: "Chicago Michigan Avenue",
            timeZone: "America/Chicago",
            market: "US",
            region: "US-IL",
            callingCode: 1,
            hours: americanHours
        ),
        StoreSeed(
            id: "5D0F1C2A-0003-4A00-8000-000000000003",
            name: "San Francisco Union Square",
            timeZone: "America/Los_Angeles",
            market: "US",
            region: "US-CA",
            callingCode: 1,
            hours: americanHours
        ),
        StoreSeed(
            id: "5D0F1C2A-0004-4A00-8000-000000000004",
            name: "Berlin Kurfürstendamm",
            timeZone: "Europe/Berlin",
            market: "DE",
            region: "DE-BE",
            callingCode: 49,
            hours: Array(repeating: "09:00-20:00", count: 6) + ["closed"]
        ),
        StoreSeed(
            id: "5D0F1C2A-0005-4A00-8000-000000000005",
            name: "Sydney George Street",
            timeZone: "Australia/Sydney",
            market: "AU",
            region: "AU-NSW",
            callingCode: 61,
            hours: [
                "09:00-18:00", "09:00-18:00", "09:00-18:00", "09:00-21:00", "09:00-18:00",
                "09:00-18:00", "10:00-17:00",
            ]
        ),
        StoreSeed(
            id: "5D0F1C2A-0006-4A00-8000-000000000006",
            name: "Perth Hay Street",
            timeZone: "Australia/Perth",
            market: "AU",
            region: "AU-WA",
            callingCode: 61,
            hours: Array(repeating: "09:00-18:00", count: 6) + ["11:00-17:00"]
        ),
    ]

    /// Store ids of the demo set, in the order above.
    public static var storeIDs: [UUID] { storeSeeds.map { UUID(uuidString: $0.id)! } }

    static let givenNames = [
        "Ana", "Ben", "Chloe", "David", "Elif", "Felix", "Grace", "Hiro", "Ines", "Jonas", "Kira",
        "Liam",
        "Mia", "Noah", "Olivia", "Paul", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wen",
        "Yusuf", "Zoë",
    ]
    static let familyNames = [
        "Weber", "Smith", "Nguyen", "Müller", "García", "Tanaka", "Okafor", "Rossi", "Kowalski",
        "Brown",
        "Schmidt", "Lee", "Johnson", "Fischer", "Martin", "O'Brien", "Silva", "Khan", "Novak",
        "Larsen",
    ]
    static let topics = [
        "Suit fitting", "Bike service pickup", "Kitchen planning", "Personal shopping",
        "Repair drop-off",
        "Order pickup", "Product demo", "Tailoring", "Gift wrapping", "Trade-in appraisal",
    ]
    static let nouns = [
        "Backpack", "Headphones", "Kettle", "Desk Lamp", "Water Bottle", "Notebook", "Sneakers",
        "Jacket",
        "Blender", "Umbrella", "Camera Strap", "Keyboard", "Mug", "Scarf", "Sunglasses", "Toaster",
        "Cutting Board", "Yoga Mat", "Speaker", "Wallet",
    ]
    static let adjectives = [
        "Classic", "Compact", "Deluxe", "Everyday", "Foldable", "Heritage", "Lightweight", "Modern",
        "Outdoor", "Premium", "Recycled", "Travel", "Urban", "Vintage", "Wireless",
    ]
    static let brands = [
        "Northwind", "Fabrikam", "Contoso", "Tailspin", "Litware", "Proseware", "Adatum", "Wingtip",
    ]

    /// Loads the demo set into a database that has no stores yet; does nothing otherwise.
    @discardableResult
    public static func seedIfEmpty(
        _ database: StoreDatabase,
        passwordIterations: Int,
        now: Date = Date(),
        logger: Logger
    ) async throws -> DemoSummary {
        let existing =
            try await database.sql.raw("SELECT COUNT(*) AS n FROM stores").first()?.int("n") ?? 0
        guard existing == 0 else { return DemoSummary() }
        let passwordHash = try makePasswordHasher(iterations: passwordIterations).hash(password)
        let images = try productsWithImages.get()
        let summary = try await database.transaction { sql in
            try await seed(sql, passwordHash: passwordHash, images: images, now: now)
        }
        try await ConfigService(database: database).ensureDefaults()
        try await applyFlags(ConfigService(database: database))
        logger.info(
            "demo data loaded",
            metadata: [
                "stores": "\(summary.stores)", "customers": "\(summary.customers)",
                "reservations": "\(summary.reservations)", "products": "\(summary.products)",
            ]
        )
        return summary
    }

    private static func seed(
        _ sql: any SQLDatabase,
        passwordHash: String,
        images: [(Product, Data)],
        now: Date
    ) async throws -> DemoSummary {
        var summary = DemoSummary(loaded: true)
        var random = SplitMix64(seed: 0x5F0C_2026)
        let stores = try storeSeeds.map {
            try Store(
                id: UUID(uuidString: $0.id)!,
                name: $0.name,
                timeZone: $0.timeZone,
                market: $0.market,
                region: $0.region,
                openingHours: openingHours($0.hours)
            )
        }
        for store in stores {
            try await Repository.insert(store, on: sql)
            summary.stores += 1
        }

        let created = try RFC3339.date(from: "2026-01-05T09:00:00Z")
        var customers: [(Customer, Int)] = []
        for index in 0..<200 {
            let given = givenNames[Int(random.next() % UInt64(givenNames.count))]
            let family = familyNames[Int(random.next() % UInt64(familyNames.count))]
            let home = index % storeSeeds.count
            let seed = storeSeeds[home]
            let local = String(format: "%07d", Int(random.next() % 10_000_000))
            let phone: String
            switch seed.callingCode {
            case 1: phone = "+1212" + local
            case 49: phone = "+4930" + local + "0"
            default: phone = "+612" + local + "1"
            }
            let mail = "\(ascii(given)).\(ascii(family))\(index)@example.com".lowercased()
            let customer = try Customer(
                id: uuid(prefix: "C0570000", index),
                givenName: given,
                familyName: family,
                email: EmailAddress(mail),
                phone: PhoneNumber(phone),
                note: index % 9 == 0 ? "Prefers e-mail contact." : nil,
                createdAt: created + Double(index) * 3600
            )
            try await Repository.insert(
                customer,
                formValues: [:],
                store: stores[home].id,
                on: sql
            )
            customers.append((customer, home))
            summary.customers += 1
        }

        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let today = utc.startOfDay(for: now)
        for index in 0..<1000 {
            let storeIndex = Int(random.next() % UInt64(stores.count))
            let store = stores[storeIndex]
            let (customer, _) = customers[Int(random.next() % UInt64(customers.count))]
            var dayOffset = Int(random.next() % 15) - 7
            let draw = Int(random.next() % 720)
            var local = Calendar(identifier: .gregorian)
            local.timeZone = store.resolvedTimeZone
            // Within the store's hours, ending an hour before closing at the latest; a closed
            // day's reservation moves to the day before.
            var span: OpeningHours.Span?
            var dayParts = DateComponents()
            for _ in 0..<7 where span == nil {
                let day = utc.date(byAdding: .day, value: dayOffset, to: today)!
                dayParts = utc.dateComponents([.year, .month, .day], from: day)
                var noon = dayParts
                noon.hour = 12
                let weekday = local.component(.weekday, from: local.date(from: noon)!)
                span = store.openingHours?.span(on: OpeningHours.Weekday(calendarWeekday: weekday))
                if span == nil { dayOffset -= 1 }
            }
            let opens = span?.opens ?? 9 * 60
            let slots = max(1, ((span?.closes ?? 19 * 60) - opens - 120) / 30 + 1)
            let minute = opens + (draw % slots) * 30
            var parts = DateComponents()
            parts.year = dayParts.year
            parts.month = dayParts.month
            parts.day = dayParts.day
            parts.hour = minute / 60
            parts.minute = minute % 60
            let startsAt = local.date(from: parts)!
            let length = [30.0, 45, 60][Int(random.next() % 3)] * 60
            let roll = Int(random.next() % 100)
            let status: Reservation.Status
            if dayOffset < 0 {
                status =
                    roll < 70
                    ? .completed : roll < 82 ? .noShow : roll < 92 ? .cancelled : .checkedIn
            } else if dayOffset == 0 {
                status =
                    roll < 60
                    ? .confirmed : roll < 85 ? .checkedIn : roll < 95 ? .requested : .cancelled
            } else {
                status = roll < 75 ? .confirmed : roll < 92 ? .requested : .cancelled
            }
            let versions: [Reservation.Status: Int] = [
                .requested: 1, .confirmed: 2, .checkedIn: 3, .completed: 4, .cancelled: 3,
                .noShow: 3,
            ]
            var codeRandom = SplitMix64(seed: 0xC0DE_0000 &+ UInt64(index))
            let reservation = try Reservation(
                id: uuid(prefix: "2E5E0000", index),
                confirmationCode: ConfirmationCode.random(using: &codeRandom),
                version: versions[status] ?? 1,
                status: status,
                startsAt: startsAt,
                endsAt: startsAt + length,
                storeID: store.id,
                customerID: customer.id,
                partySize: 1 + Int(random.next() % 4),
                topic: topics[Int(random.next() % UInt64(topics.count))],
                notes: index % 7 == 0 ? "Customer asked for a quiet corner." : nil
            )
            if try await Repository.insert(reservation, store: store, now: created, on: sql) {
                summary.reservations += 1
            }
        }

        let imageTime = try RFC3339.date(from: "2026-01-05T09:00:00Z")
        for (product, png) in images {
            try await sql.raw(
                """
                INSERT INTO products (gtin, sku, title, brand, status, price_amount, price_currency, search_text, has_image)
                VALUES (\(bind: product.gtin.gtin14), \(bind: product.sku), \(bind: product.title), \(bind: product.brand),
                        \(bind: product.status.rawValue), \(bind: product.price.amountString), \(bind: product.price.currency.code),
                        \(bind: Repository.productSearchText(product)), 1)
                """
            ).run()
            try await sql.raw(
                """
                INSERT INTO product_images (gtin, png, etag, updated_at)
                VALUES (\(bind: product.gtin.gtin14), \(bind: png), \(bind: EntityTag.shortHash(png)), \(bind: DBTime.millis(imageTime)))
                """
            ).run()
            summary.products += 1
        }

        let users: [(String, String, Role, [UUID], String)] = [
            (username, "Demo Associate", .associate, [stores[3].id], passwordHash),
            (
                managerUsername, "Demo Manager", .manager, [stores[0].id, stores[1].id],
                passwordHash
            ),
            (adminUsername, "Demo Administrator", .admin, [], passwordHash),
        ]
        for (name, display, role, storeIDs, hash) in users {
            try await sql.raw(
                """
                INSERT INTO users (username, display_name, home_store_id, password_hash, created_at, updated_at, role)
                VALUES (\(bind: name), \(bind: display), \(bind: storeIDs.first?.uuidString), \(bind: hash), \(bind: DBTime.millis(created)), \(bind: DBTime.millis(created)), \(bind: role.rawValue))
                ON CONFLICT (username) DO NOTHING
                """
            ).run()
            for store in storeIDs {
                try await sql.raw(
                    "INSERT INTO user_stores (username, store_id) VALUES (\(bind: name), \(bind: store.uuidString)) ON CONFLICT DO NOTHING"
                ).run()
            }
            summary.users += 1
        }
        return summary
    }

    /// The demo products with their pictures, drawn and encoded once per process: they are
    /// deterministic, and a process that seeds several databases (the tests) drew 500
    /// pictures for each. About 1 MB, kept for the process's life.
    private static let productsWithImages = Result {
        try productSeeds().map { ($0, try image(for: $0.gtin)) }
    }

    /// The 500 demo products (deterministic), GTIN-13s under the prefix 400638.
    static func productSeeds() throws -> [Product] {
        var random = SplitMix64(seed: 0x9A0D_0C75)
        var products: [Product] = []
        for index in 0..<500 {
            let body = "400638" + String(format: "%06d", 100_000 + index * 37)
            let gtin = try GTIN(
                body + String(GTIN.checkDigit(for: body.compactMap(\.wholeNumberValue)))
            )
            let adjective = adjectives[Int(random.next() % UInt64(adjectives.count))]
            let noun = nouns[Int(random.next() % UInt64(nouns.count))]
            let cents = 499 + Int64(random.next() % 30_000)
            let roll = random.next() % 100
            products.append(
                try Product(
                    gtin: gtin,
                    sku: String(format: "SKU-%05d", index + 1),
                    title: "\(adjective) \(noun)",
                    brand: brands[Int(random.next() % UInt64(brands.count))],
                    status: roll < 88
                        ? .active : roll < 95 ? .discontinued : roll < 98 ? .draft : .recalled,
                    price: Money(minorUnits: cents, currency: index % 3 == 2 ? .usd : .eur),
                    imageReference: "/v1/products/\(gtin.gtin14)/image"
                )
            )
        }
        return products
    }

    /// A 96×96 picture for a GTIN: a colour field from its digits, a disc, and the digits as
    /// bars along the bottom.
    static func image(for gtin: GTIN) throws -> Data {
        let size = 96
        let digits = gtin.gtin14.compactMap { $0.wholeNumberValue }
        var random = SplitMix64(seed: UInt64(gtin.gtin14) ?? 1)
        let base = (
            UInt8(64 + random.next() % 160), UInt8(64 + random.next() % 160),
            UInt8(64 + random.next() % 160)
        )
        let accent = (255 - base.0, 255 - base.1, 255 - base.2)
        var pixels = [UInt8](repeating: 0, count: size * size * 3)
        let radius = Double(18 + digits[12] * 2)
        for y in 0..<size {
            for x in 0..<size {
                var color = base
                let dx = Double(x - 48), dy = Double(y - 40)
                if dx * dx + dy * dy <= radius * radius { color = accent }
                if y >= 78, y < 92 {
                    let bar = (x - 6) / 6
                    if x >= 6, bar < 14, (x - 6) % 6 < 1 + digits[bar] / 2 { color = (20, 20, 20) }
                }
                let offset = (y * size + x) * 3
                pixels[offset] = color.0
                pixels[offset + 1] = color.1
                pixels[offset + 2] = color.2
            }
        }
        return try PNGEncoder.encodeRGB(width: size, height: size, pixels: pixels)
    }

    /// Flags that differ by market, region and store.
    static func applyFlags(_ config: ConfigService) async throws {
        let ids = storeIDs
        try await config.setFlag(KnownFlag.maxPartySize, value: .number(8), scope: .global)
        try await config.setFlag(KnownFlag.maxPartySize, value: .number(6), scope: .market("US"))
        try await config.setFlag(
            KnownFlag.maxPartySize,
            value: .number(10),
            scope: .region("US-CA")
        )
        try await config.setFlag(KnownFlag.maxPartySize, value: .number(4), scope: .store(ids[3]))
        try await config.setFlag(
            KnownFlag.checkInEnabled,
            value: .bool(false),
            scope: .store(ids[5])
        )
        try await config.setFlag(
            KnownFlag.newReservationsEnabled,
            value: .bool(false),
            scope: .store(ids[1])
        )
        try await config.setFlag(
            KnownFlag.cancellationEnabled,
            value: .bool(false),
            scope: .store(ids[4])
        )
        try await config.setFlag(
            KnownFlag.reservationSlotMinutes,
            value: .number(45),
            scope: .market("DE")
        )
        try await config.setFlag(
            KnownFlag.storeNotice,
            value: .string("Public holiday hours apply."),
            scope: .market("AU")
        )
        try await config.setFlag(
            KnownFlag.storeNotice,
            value: .string("Parking garage closed on Saturdays."),
            scope: .store(ids[2])
        )
        try await config.setMinimumVersion(app: "*", version: SemanticVersion(0, 1, 0))
    }

    /// Opening hours from Monday … Sunday texts (`HH:MM-HH:MM` or `closed`).
    static func openingHours(_ week: [String]) throws -> OpeningHours {
        var hours = OpeningHours()
        for (day, text) in zip(OpeningHours.Weekday.allCases, week) where text != "closed" {
            hours.set(try OpeningHours.Span(parsing: text), on: [day])
        }
        return hours
    }

    static func uuid(prefix: String, _ index: Int) -> UUID {
        UUID(uuidString: "\(prefix)-0000-4000-8000-\(String(format: "%012d", index))")!
    }

    static func ascii(_ text: String) -> String {
        String(
            text.folding(
                options: [.diacriticInsensitive],
                locale: Locale(identifier: "en_US_POSIX")
            )
            .filter { $0.isASCII && ($0.isLetter || $0.isNumber) }
        )
    }
}

/// A small deterministic generator (SplitMix64), so the demo data repeats exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
