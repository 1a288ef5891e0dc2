internal import Foundation
internal import Models
internal import SQLKit

/// Queries for stores, customers, reservations and products. Every query for stores,
/// customers and reservations takes the caller's ``StoreScope`` and sees nothing outside it.
struct Repository: Sendable {
    let database: StoreDatabase
    var sql: any SQLDatabase { database.sql }

    // MARK: Stores

    func stores(_ page: PageRequest, scope: StoreScope) async throws -> Page<Store> {
        var query: SQLQueryString =
            "SELECT \(unsafeRaw: ModelRows.storeColumns) FROM stores s WHERE "
            + scope.condition("s.id")
        if let cursor = page.cursor {
            query +=
                " AND (s.name > \(bind: cursor.values[0]) OR (s.name = \(bind: cursor.values[0]) AND s.id > \(bind: cursor.values[1])))"
        }
        query += " ORDER BY s.name, s.id LIMIT \(literal: page.limit + 1)"
        let rows = try await sql.raw(query).all()
        let stores = try rows.map(ModelRows.store)
        return paged(stores, limit: page.limit) { PageCursor([$0.name, $0.id.uuidString]) }
    }

    func store(id: UUID, scope: StoreScope) async throws -> Store? {
        guard scope.contains(id) else { return nil }
        return try await sql.raw(
            "SELECT \(unsafeRaw: ModelRows.storeColumns) FROM stores s WHERE s.id = \(bind: id.uuidString)"
        ).first().map(ModelRows.store)
    }

    /// The store with id or short name `reference`, if in `scope`.
    func store(reference: String, scope: StoreScope) async throws -> Store? {
        if let id = UUID(uuidString: reference) { return try await store(id: id, scope: scope) }
        guard Store.isShortName(reference) else { return nil }
        return try await sql.raw(
            SQLQueryString(
                "SELECT \(unsafeRaw: ModelRows.storeColumns) FROM stores s WHERE s.short_name = "
            ) + "\(bind: reference) AND " + scope.condition("s.id")
        ).first().map(ModelRows.store)
    }

    /// Inserts a store with a free short name (its own, else the name's, with `-2`, `-3`, …).
    static func insert(_ store: Store, on sql: any SQLDatabase) async throws {
        let shortName = try await freeShortName(
            store.shortName ?? Store.shortName(for: store.name),
            on: sql
        )
        try await sql.raw(
            """
            INSERT INTO stores (id, name, time_zone, market, region, short_name, opening_hours)
            VALUES (\(bind: store.id.uuidString), \(bind: store.name), \(bind: store.timeZone), \(bind: store.market), \(bind: store.region), \(bind: shortName),
                    \(bind: try ModelRows.openingHoursText(store.openingHours)))
            """
        ).run()
    }

    /// Replaces a store's opening hours (nil: none, any time); false when there is no such store.
    func setOpeningHours(_ hours: OpeningHours?, store id: UUID) async throws -> Bool {
        let rows = try await sql.raw(
            """
            UPDATE stores SET opening_hours = \(bind: try ModelRows.openingHoursText(hours))
            WHERE id = \(bind: id.uuidString) RETURNING id
            """
        ).all()
        return !rows.isEmpty
    }

    /// `wanted`, or `wanted-2`, `wanted-3`, … whichever no store has yet.
    static func freeShortName(_ wanted: String, on sql: any SQLDatabase) async throws -> String {
        var candidate = wanted
        var number = 1
        while try await sql.raw(
            "SELECT id FROM stores WHERE short_name = \(bind: candidate)"
        ).first() != nil {
            number += 1
            let suffix = "-\(number)"
            candidate = String(wanted.prefix(64 - suffix.count)) + suffix
        }
        return candidate
    }

    // MARK: Customers

    func customers(query text: String?, store: UUID?, _ page: PageRequest, scope: StoreScope)
        async throws -> Page<Customer>
    {
        let visible = store.map { scope.narrowed(to: $0) } ?? scope
        var query: SQLQueryString =
            "SELECT \(unsafeRaw: ModelRows.customerColumns) FROM customers c WHERE "
            + Self.customerVisible(visible)
        if let text, !text.isEmpty { query += " AND " + Self.customerMatch(text) }
        if let cursor = page.cursor {
            query += """
                 AND (c.family_name > \(bind: cursor.values[0]) OR (c.family_name = \(bind: cursor.values[0]) AND (c.given_name > \(bind: cursor.values[1]) OR (c.given_name = \(bind: cursor.values[1]) AND c.id > \(bind: cursor.values[2])))))
                """
        }
        query += " ORDER BY c.family_name, c.given_name, c.id LIMIT \(literal: page.limit + 1)"
        let customers = try await sql.raw(query).all().map(ModelRows.customer)
        return paged(customers, limit: page.limit) {
            PageCursor([$0.familyName, $0.givenName, $0.id.uuidString])
        }
    }

    /// Name (given, family, full), e-mail or phone digits, case-blind.
    static func customerMatch(_ text: String) -> SQLQueryString {
        var clause: SQLQueryString =
            "(c.search_text LIKE \(bind: SearchText.likePattern(text)) ESCAPE '\\'"
        if let digits = SearchText.phoneDigits(text) {
            clause += " OR c.search_text LIKE \(bind: "%#%" + digits + "%")"
        }
        return clause + ")"
    }

    /// A customer belongs to the store it was created for and to every store where it holds
    /// a reservation.
    static func customerVisible(_ scope: StoreScope) -> SQLQueryString {
        if scope.isEveryStore { return "1 = 1" }
        return "(" + scope.condition("c.store_id")
            + " OR EXISTS (SELECT 1 FROM reservations rs WHERE rs.customer_id = c.id AND "
            + scope.condition("rs.store_id") + "))"
    }

    func customer(id: UUID, scope: StoreScope) async throws -> Customer? {
        try await sql.raw(
            "SELECT \(unsafeRaw: ModelRows.customerColumns) FROM customers c WHERE c.id = \(bind: id.uuidString) AND "
                + Self.customerVisible(scope)
        ).first().map(ModelRows.customer)
    }

    /// Inserts a customer created for `store` (nil: no store; only an admin sees it then).
    static func insert(
        _ customer: Customer,
        formValues: [String: String],
        store: UUID?,
        on sql: any SQLDatabase
    ) async throws {
        let extra = formValues.filter {
            !["givenName", "familyName", "email", "phone", "note"].contains($0.key)
        }
        let formJSON =
            extra.isEmpty
            ? nil : String(decoding: try JSONEncoder.shopfloor.encode(extra), as: UTF8.self)
        let search = SearchText.customer(
            givenName: customer.givenName,
            familyName: customer.familyName,
            email: customer.email?.value,
            phone: customer.phone?.e164
        )
        try await sql.raw(
            """
            INSERT INTO customers (id, version, given_name, family_name, email, phone, note, form_values, search_text, created_at, updated_at, store_id)
            VALUES (\(bind: customer.id.uuidString), \(bind: customer.version), \(bind: customer.givenName), \(bind: customer.familyName),
                    \(bind: customer.email?.value), \(bind: customer.phone?.e164), \(bind: customer.note), \(bind: formJSON),
                    \(bind: search), \(bind: DBTime.millis(customer.createdAt)), \(bind: DBTime.millis(customer.updatedAt)), \(bind: store?.uuidString))
            """
        ).run()
    }

    // MARK: Reservations

    struct ReservationFilter {
        var text: String?
        var date: String?
        var statuses: [Reservation.Status] = []
        var storeID: UUID?
    }

    /// The values of a reservation search's cursor: the instant that splits upcoming from
    /// past (fixed by the first page, so later pages keep its order), then the last item's
    /// group (0 upcoming, 1 past), its signed start and its id.
    static let reservationCursorValues = 4

    /// Reservations matching `filter`, upcoming first: those not yet over at `now` by start
    /// (nearest first), then past ones by start descending (most recent first); ties by id.
    func reservations(
        _ filter: ReservationFilter,
        _ page: PageRequest,
        scope: StoreScope,
        now: Date
    ) async throws -> Page<ReservationDetail> {
        var query =
            SQLQueryString(ModelRows.detailSelect) + " WHERE " + scope.condition("r.store_id")
        if let text = filter.text, !text.isEmpty {
            var match: SQLQueryString = "(" + Self.customerMatch(text)
            if let code = try? ConfirmationCode(passPayload: text) {
                match += " OR r.code = \(bind: code.compact)"
            }
            query += " AND " + match + ")"
        }
        if let date = filter.date { query += " AND r.local_date = \(bind: date)" }
        if !filter.statuses.isEmpty {
            query += " AND r.status IN (\(binds: filter.statuses.map(\.rawValue)))"
        }
        if let storeID = filter.storeID { query += " AND r.store_id = \(bind: storeID.uuidString)" }
        var pivot = DBTime.millis(now)
        if let cursor = page.cursor {
            guard let split = Int64(cursor.values[0]), let group = Int64(cursor.values[1]),
                (0...1).contains(group), let key = Int64(cursor.values[2])
            else {
                throw APIError.badRequest(
                    "query parameter 'cursor' is not a cursor this server issued"
                )
            }
            pivot = split
            let (rowGroup, rowKey) = Self.orderKeys(pivot)
            query +=
                " AND (\(rowGroup) > \(bind: group) OR (\(rowGroup) = \(bind: group) AND (\(rowKey) > \(bind: key) OR (\(rowKey) = \(bind: key) AND r.id > \(bind: cursor.values[3])))))"
        }
        let (rowGroup, rowKey) = Self.orderKeys(pivot)
        query += " ORDER BY \(rowGroup), \(rowKey), r.id LIMIT \(literal: page.limit + 1)"
        let details = try await sql.raw(query).all().map(ModelRows.detail)
        return paged(details, limit: page.limit) { [pivot] detail in
            let starts = DBTime.millis(detail.reservation.startsAt)
            let upcoming = DBTime.millis(detail.reservation.endsAt) > pivot
            return PageCursor([
                String(pivot), upcoming ? "0" : "1", String(upcoming ? starts : -starts),
                detail.reservation.id.uuidString,
            ])
        }
    }

    /// The SQL of a row's group (0: not over at `pivot`, 1: past) and of its key within the
    /// group (the start, negated for past rows so that they sort most recent first).
    private static func orderKeys(_ pivot: Int64) -> (SQLQueryString, SQLQueryString) {
        (
            "(CASE WHEN r.ends_at > \(literal: Int(pivot)) THEN 0 ELSE 1 END)",
            "(CASE WHEN r.ends_at > \(literal: Int(pivot)) THEN r.starts_at ELSE -r.starts_at END)"
        )
    }

    func reservation(id: UUID, scope: StoreScope) async throws -> ReservationDetail? {
        try await sql.raw(
            SQLQueryString(ModelRows.detailSelect) + " WHERE r.id = \(bind: id.uuidString) AND "
                + scope.condition("r.store_id")
        ).first().map(ModelRows.detail)
    }

    /// Show-by-code, the busiest read of the counter: a prepared statement on PostgreSQL.
    func reservation(code: ConfirmationCode, scope: StoreScope) async throws -> ReservationDetail? {
        let stores = scope.storeIDs
        return try await database.rows(
            PreparedStatements.ReservationByCode(
                code: code.compact,
                everyStore: stores == nil,
                stores: stores ?? []
            ),
            otherwise: SQLQueryString(ModelRows.detailSelect)
                + " WHERE r.code = \(bind: code.compact) AND " + scope.condition("r.store_id")
        ).first.map(ModelRows.detail)
    }

    /// The calendar day of `instant` in `store`'s time zone, `YYYY-MM-DD`.
    static func localDate(_ instant: Date, in store: Store) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = store.resolvedTimeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: instant)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    /// Inserts a reservation; false (nothing inserted) when its confirmation code is taken.
    static func insert(_ reservation: Reservation, store: Store, now: Date, on sql: any SQLDatabase)
        async throws -> Bool
    {
        try await !sql.raw(
            """
            INSERT INTO reservations (id, code, version, status, starts_at, ends_at, local_date, store_id, customer_id, party_size, topic, notes, created_at, updated_at)
            VALUES (\(bind: reservation.id.uuidString), \(bind: reservation.confirmationCode.compact), \(bind: reservation.version),
                    \(bind: reservation.status.rawValue), \(bind: DBTime.millis(reservation.startsAt)), \(bind: DBTime.millis(reservation.endsAt)),
                    \(bind: localDate(reservation.startsAt, in: store)), \(bind: reservation.storeID.uuidString), \(bind: reservation.customerID.uuidString),
                    \(bind: reservation.partySize), \(bind: reservation.topic), \(bind: reservation.notes),
                    \(bind: DBTime.millis(now)), \(bind: DBTime.millis(now)))
            ON CONFLICT (code) DO NOTHING RETURNING id
            """
        ).all().isEmpty
    }

    /// Writes `updated` if the stored version is still `expectedVersion` (compare-and-set);
    /// returns false when another change came first.
    func update(
        _ updated: Reservation,
        store: Store,
        expectedVersion: Int,
        now: Date,
        scope: StoreScope
    ) async throws -> Bool {
        let rows = try await sql.raw(
            """
            UPDATE reservations SET version = \(bind: updated.version), status = \(bind: updated.status.rawValue),
                starts_at = \(bind: DBTime.millis(updated.startsAt)), ends_at = \(bind: DBTime.millis(updated.endsAt)),
                local_date = \(bind: Self.localDate(updated.startsAt, in: store)), party_size = \(bind: updated.partySize),
                topic = \(bind: updated.topic), notes = \(bind: updated.notes), updated_at = \(bind: DBTime.millis(now))
            WHERE id = \(bind: updated.id.uuidString) AND version = \(bind: expectedVersion) AND \(scope.condition("store_id"))
            RETURNING id
            """
        ).all()
        return !rows.isEmpty
    }

    // MARK: Products

    func products(query text: String?, _ page: PageRequest) async throws -> Page<Product> {
        var query: SQLQueryString =
            "SELECT \(unsafeRaw: ModelRows.productColumns) FROM products p WHERE 1 = 1"
        if let text, !text.isEmpty {
            query += " AND p.search_text LIKE \(bind: SearchText.likePattern(text)) ESCAPE '\\'"
        }
        if let cursor = page.cursor { query += " AND p.gtin > \(bind: cursor.values[0])" }
        query += " ORDER BY p.gtin LIMIT \(literal: page.limit + 1)"
        let products = try await sql.raw(query).all().map(ModelRows.product)
        return paged(products, limit: page.limit) { PageCursor([$0.gtin.gtin14]) }
    }

    func product(gtin: GTIN) async throws -> Product? {
        try await sql.raw(
            "SELECT \(unsafeRaw: ModelRows.productColumns) FROM products p WHERE p.gtin = \(bind: gtin.gtin14)"
        ).first().map(ModelRows.product)
    }

    struct ProductImage {
        var png: Data
        var etag: String
        var updatedAt: Date
    }

    func productImage(gtin: GTIN) async throws -> ProductImage? {
        guard
            let row = try await sql.raw(
                "SELECT png, etag, updated_at FROM product_images WHERE gtin = \(bind: gtin.gtin14)"
            ).first()
        else { return nil }
        return ProductImage(
            png: try row.decode(column: "png", as: Data.self),
            etag: try row.string("etag"),
            updatedAt: try row.instant("updated_at")
        )
    }

    static func productSearchText(_ product: Product) -> String {
        SearchText.fold(
            [
                product.title, product.brand ?? "", product.sku, product.gtin.gtin14,
                product.gtin.description,
            ]
            .joined(separator: "\u{1F}")
        )
    }

    /// Whether the reservation or customer a path names (`/v1/reservations/{id}…`,
    /// `/v1/customers/{id}`) is in `scope`; paths that name neither are visible.
    func isVisible(_ path: String, scope: StoreScope) async throws -> Bool {
        let parts = path.split(separator: "/")
        guard parts.count >= 3, parts[0] == "v1", let id = UUID(uuidString: String(parts[2]))
        else { return true }
        switch parts[1] {
        case "reservations": return try await reservation(id: id, scope: scope) != nil
        case "customers": return try await customer(id: id, scope: scope) != nil
        default: return true
        }
    }

    // MARK: Paging

    private func paged<T>(_ items: [T], limit: Int, cursor: (T) -> PageCursor) -> Page<T> {
        guard items.count > limit else { return Page(items: items, nextCursor: nil) }
        let page = Array(items.prefix(limit))
        return Page(items: page, nextCursor: page.last.map { cursor($0).encoded })
    }
}
