internal import Foundation
internal import Models
internal import SQLKit
internal import Synchronization

/// Reading columns the same way on SQLite and PostgreSQL.
extension SQLRow {
    func string(_ column: String) throws -> String { try decode(column: column, as: String.self) }

    func optionalString(_ column: String) throws -> String? {
        try decodeNil(column: column) ? nil : decode(column: column, as: String.self)
    }

    func int(_ column: String) throws -> Int64 { try decode(column: column, as: Int64.self) }

    func optionalInt(_ column: String) throws -> Int64? {
        try decodeNil(column: column) ? nil : decode(column: column, as: Int64.self)
    }

    func uuid(_ column: String) throws -> UUID {
        let text = try string(column)
        guard let id = UUID(parsing: text) else {
            throw StoredDataError("column \(column) holds '\(text.prefix(40))', not a UUID")
        }
        return id
    }

    func instant(_ column: String) throws -> Date { DBTime.date(try int(column)) }
}

/// A row that does not hold what the schema promises (a bug or a hand-edited database).
struct StoredDataError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The column lists and row readers for each model.
enum ModelRows {
    static let storeColumns =
        "s.id AS s_id, s.name AS s_name, s.time_zone AS s_time_zone, s.market AS s_market, s.region AS s_region, s.short_name AS s_short_name, s.opening_hours AS s_opening_hours"

    static func store(_ row: any SQLRow) throws -> Store {
        try Store(
            id: row.uuid("s_id"),
            name: row.string("s_name"),
            timeZone: row.string("s_time_zone"),
            market: row.string("s_market"),
            region: row.string("s_region"),
            shortName: row.optionalString("s_short_name"),
            openingHours: openingHours(row.optionalString("s_opening_hours"))
        )
    }

    /// Opening hours already decoded, by their stored text. Every reservation read decodes its
    /// store's hours, and stores have few versions of them: decoding the JSON each time was
    /// about 7% of the server's CPU for show-by-code. Emptied when it grows past 1,024 texts.
    private static let decodedHours = Mutex<[String: OpeningHours]>([:])

    /// Stored opening hours (JSON), nil for none.
    static func openingHours(_ text: String?) throws -> OpeningHours? {
        guard let text else { return nil }
        if let hours = decodedHours.withLock({ $0[text] }) { return hours }
        let hours: OpeningHours
        do {
            hours = try JSONDecoder().decode(OpeningHours.self, from: Data(text.utf8))
        } catch {
            throw StoredDataError("a store's opening hours '\(text.prefix(80))' cannot be read")
        }
        decodedHours.withLock { cache in
            if cache.count >= 1_024 { cache.removeAll() }
            cache[text] = hours
        }
        return hours
    }

    /// Opening hours as stored (JSON), nil for none.
    static func openingHoursText(_ hours: OpeningHours?) throws -> String? {
        guard let hours else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(hours), as: UTF8.self)
    }

    static let customerColumns = """
        c.id AS c_id, c.version AS c_version, c.given_name AS c_given_name,
        c.family_name AS c_family_name, c.email AS c_email, c.phone AS c_phone, c.note AS c_note,
        c.created_at AS c_created_at, c.updated_at AS c_updated_at
        """

    static func customer(_ row: any SQLRow) throws -> Customer {
        try Customer(
            id: row.uuid("c_id"),
            version: Int(row.int("c_version")),
            givenName: row.string("c_given_name"),
            familyName: row.string("c_family_name"),
            email: row.optionalString("c_email").map { try EmailAddress($0) },
            phone: row.optionalString("c_phone").map { try PhoneNumber($0) },
            note: row.optionalString("c_note"),
            createdAt: row.instant("c_created_at"),
            updatedAt: row.instant("c_updated_at")
        )
    }

    static let reservationColumns = """
        r.id AS r_id, r.code AS r_code, r.version AS r_version, r.status AS r_status,
        r.starts_at AS r_starts_at, r.ends_at AS r_ends_at, r.store_id AS r_store_id,
        r.customer_id AS r_customer_id, r.party_size AS r_party_size, r.topic AS r_topic,
        r.notes AS r_notes
        """

    static func reservation(_ row: any SQLRow) throws -> Reservation {
        let statusText = try row.string("r_status")
        guard let status = Reservation.Status(rawValue: statusText) else {
            throw StoredDataError("reservation status '\(statusText)' is unknown")
        }
        return try Reservation(
            id: row.uuid("r_id"),
            confirmationCode: ConfirmationCode(row.string("r_code")),
            version: Int(row.int("r_version")),
            status: status,
            startsAt: row.instant("r_starts_at"),
            endsAt: row.instant("r_ends_at"),
            storeID: row.uuid("r_store_id"),
            customerID: row.uuid("r_customer_id"),
            partySize: Int(row.int("r_party_size")),
            topic: row.string("r_topic"),
            notes: row.optionalString("r_notes")
        )
    }

    /// `SELECT … FROM reservations r JOIN customers c JOIN stores s` (add `WHERE …`).
    static let detailSelect =
        "SELECT \(reservationColumns), \(customerColumns), \(storeColumns) FROM reservations r JOIN customers c ON c.id = r.customer_id JOIN stores s ON s.id = r.store_id"

    static func detail(_ row: any SQLRow) throws -> ReservationDetail {
        try ReservationDetail(
            reservation: reservation(row),
            customer: customer(row),
            store: store(row)
        )
    }

    static let productColumns =
        "p.gtin AS p_gtin, p.sku AS p_sku, p.title AS p_title, p.brand AS p_brand, p.status AS p_status, p.price_amount AS p_price_amount, p.price_currency AS p_price_currency, p.has_image AS p_has_image"

    static func product(_ row: any SQLRow) throws -> Product {
        let gtin = try GTIN(row.string("p_gtin"))
        let statusText = try row.string("p_status")
        guard let status = Product.Status(rawValue: statusText) else {
            throw StoredDataError("product status '\(statusText)' is unknown")
        }
        return try Product(
            gtin: gtin,
            sku: row.string("p_sku"),
            title: row.string("p_title"),
            brand: row.optionalString("p_brand"),
            status: status,
            price: Money(
                amount: row.string("p_price_amount"),
                currency: CurrencyCode(row.string("p_price_currency"))
            ),
            imageReference: try row.int("p_has_image") != 0
                ? "/v1/products/\(gtin.gtin14)/image" : nil
        )
    }
}

/// Text folded for case-blind search: lowercased, diacritics kept.
enum SearchText {
    static func fold(_ text: String) -> String { text.lowercased() }

    /// `%text%` for LIKE, with `%`, `_` and `\` escaped (use `ESCAPE '\'`).
    static func likePattern(_ text: String) -> String {
        var out = "%"
        for character in fold(text) {
            if character == "%" || character == "_" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "%"
    }

    /// The digits of a phone-like query (`+49 (30) 123-45`), or nil when it has letters.
    static func phoneDigits(_ text: String) -> String? {
        let digits = text.filter(\.isASCIIDigitCharacter)
        guard digits.count >= 3,
            text.allSatisfy({ $0.isASCIIDigitCharacter || " +-()./".contains($0) })
        else { return nil }
        return digits
    }

    static func customer(
        givenName: String,
        familyName: String,
        email: String?,
        phone: String?
    ) -> String {
        var parts = [
            "\(givenName) \(familyName)", "\(familyName) \(givenName)",
            "\(familyName), \(givenName)",
        ]
        if let email { parts.append(email) }
        if let phone { parts.append("#" + phone.filter(\.isASCIIDigitCharacter)) }
        return fold(parts.joined(separator: "\u{1F}"))
    }
}

extension Character {
    var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
