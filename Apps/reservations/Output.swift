import ClientCommands
import CommandSupport
import Foundation
import Models
import SuiteClient

/// `reservations`' printers: reservations as tables or labelled lines, times in each store's
/// time zone.
extension Output {
    // MARK: Reservations

    /// The columns a list can show; a query that fixes one (`--store`, `--status`) omits it.
    enum ListColumn: String, CaseIterable {
        case code = "CODE"
        case when = "WHEN (store time)"
        case status = "STATUS"
        case customer = "CUSTOMER"
        case party = "PARTY"
        case topic = "TOPIC"
        case store = "STORE"
    }

    /// A list: JSON page or a table with the times in each store's time zone, fitted to the
    /// terminal's width, without the columns in `fixed`; the next page as a command to run.
    func printList(_ fetched: Fetched<Page<ReservationDetail>>, fixed: Set<ListColumn> = [])
        throws
    {
        if json { return try printPage(fetched) }
        let page = fetched.value
        let columns = ListColumn.allCases.filter { !fixed.contains($0) }
        let rows = page.items.map { detail -> [Cell] in
            let r = detail.reservation
            return columns.map { column in
                switch column {
                case .code: Cell(r.confirmationCode.description)
                case .when: Cell(Self.span(r.startsAt, r.endsAt, in: detail.store))
                case .status: Cell(r.status.rawValue, style: Self.style(of: r.status))
                case .customer: Cell(detail.customer.displayName)
                case .party: Cell(String(r.partySize), alignRight: true)
                case .topic: Cell(r.topic)
                case .store: Cell(detail.store.name)
                }
            }
        }
        try writeOut(table(header: columns.map(\.rawValue), rows: rows))
        if page.items.isEmpty { note("no reservations") }
        if let cursor = page.nextCursor {
            note("next page: \(Self.command(replacing: "--cursor", with: cursor))")
        }
    }

    /// One reservation: JSON (with its customer and store) or a block of labelled lines.
    func printReservation(_ detail: ReservationDetail) throws {
        if json { return try printJSON(detail) }
        let r = detail.reservation
        let c = detail.customer
        var contact = [c.displayName]
        if let email = c.email { contact.append(email.value) }
        if let phone = c.phone { contact.append(phone.e164) }
        var lines: [(String, Cell)] = [
            ("Reservation", Cell("\(r.confirmationCode)  (id \(r.id.uuidString))")),
            ("Status", Cell(r.status.rawValue, style: Self.style(of: r.status))),
            (
                "When",
                Cell(
                    "\(Self.span(r.startsAt, r.endsAt, in: detail.store)) \(detail.store.timeZone)"
                )
            ),
            ("Store", Cell("\(detail.store.name) (\(detail.store.id.uuidString))")),
            ("Customer", Cell(contact.joined(separator: ", "))),
            ("Party", Cell(String(r.partySize))),
            ("Topic", Cell(r.topic)),
        ]
        if let notes = r.notes, !notes.isEmpty {
            lines.append(("Notes", Cell(notes, multiline: true)))
        }
        lines.append(("Version", Cell(String(r.version))))
        try writeOut(labelled(lines))
    }

    // MARK: Tables

    /// A table cell (newlines become spaces, optional ANSI style, alignment).
    typealias Cell = TextTable.Cell

    /// Columns padded to their widest cell (in display columns), two spaces apart, fitted to
    /// the terminal's width by narrowing text columns; what is typed or read back (a code, a
    /// time, a store's short name or id) stays whole.
    func table(header: [String], rows: [[Cell]]) -> String {
        let typed: Set<String> = ["CODE", "SHORT NAME", "ID"]
        let whole = Set(
            header.indices.filter { typed.contains(header[$0]) || header[$0].hasPrefix("WHEN") }
        )
        return TextTable(header: header, rows: rows, wholeColumns: whole)
            .render(color: color, width: Console.stdoutColumns)
    }

    /// ANSI styles by status.
    static func style(of status: Reservation.Status) -> String? {
        switch status {
        case .confirmed: "32"
        case .checkedIn: "36"
        case .completed: "2"
        case .cancelled: "31"
        case .noShow: "33"
        case .requested: nil
        }
    }

    // MARK: Times

    /// `2025-06-01 10:30–11:00` in the store's time zone (the end's date too when it differs).
    static func span(_ start: Date, _ end: Date, in store: Store) -> String {
        let zone = store.resolvedTimeZone
        let from = wallClock(start, zone)
        let to = wallClock(end, zone)
        return from.date == to.date
            ? "\(from.date) \(from.time)–\(to.time)"
            : "\(from.date) \(from.time)–\(to.date) \(to.time)"
    }

    /// The date and time of an instant in a zone, computed from its offset (no formatter).
    static func wallClock(_ instant: Date, _ zone: TimeZone) -> (date: String, time: String) {
        let offset = zone.secondsFromGMT(for: instant)
        let local = Int64((instant.timeIntervalSince1970).rounded(.down)) + Int64(offset)
        let days = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        let secondOfDay = local - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let date = String(format: "%04d-%02d-%02d", year, month, day)
        let time = String(format: "%02d:%02d", secondOfDay / 3_600, (secondOfDay % 3_600) / 60)
        return (date, time)
    }

    /// Howard Hinnant's civil_from_days.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
