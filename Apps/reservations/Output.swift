import CommandSupport
import Foundation
import Models
import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

/// Presentation: tables for people on a terminal, JSON for programs, messages on stderr.
struct Output {
    /// JSON on stdout (asked for, or stdout is not a terminal).
    let json: Bool
    /// Colour in tables: stdout is a terminal, `NO_COLOR` unset, `TERM` not `dumb`.
    let color: Bool
    let quiet: Bool

    init(options: CommonOptions) {
        let terminal = isatty(1) == 1
        json = options.json || !terminal
        let noColor = getenv("NO_COLOR").map { String(cString: $0) } ?? ""
        let term = getenv("TERM").map { String(cString: $0) } ?? ""
        color = terminal && !options.json && noColor.isEmpty && term != "dumb"
        quiet = options.quiet
    }

    // MARK: stderr

    func warning(_ text: String) { Console.warning(text) }

    /// A note for people; `--quiet` drops it.
    func note(_ text: String) { if !quiet { Console.note(text) } }

    /// Says on stderr that `fetched` came from the offline cache, and how old it is.
    func sayIfCached<Value>(_ fetched: Fetched<Value>, what: String) {
        guard case .cache(let fetchedAt, let reason) = fetched.origin else { return }
        warning(
            "offline: \(reason); showing \(what) saved \(Self.age(since: fetchedAt)) ago (\(RFC3339.string(from: fetchedAt)))"
        )
    }

    /// `12 s`, `5 min`, `3 h 4 min`, `2 days`.
    static func age(since date: Date, now: Date = Date()) -> String {
        let seconds = max(0, Int(now.timeIntervalSince(date)))
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3_600 { return "\(seconds / 60) min" }
        if seconds < 86_400 {
            let minutes = (seconds % 3_600) / 60
            return minutes == 0 ? "\(seconds / 3_600) h" : "\(seconds / 3_600) h \(minutes) min"
        }
        let days = seconds / 86_400
        return days == 1 ? "1 day" : "\(days) days"
    }

    // MARK: stdout

    /// One JSON document on stdout, the suite's encoding (sorted keys, RFC 3339 instants).
    func printJSON(_ value: some Encodable) throws {
        let data = try ModelsJSON.makeEncoder().encode(value)
        var text = String(decoding: data, as: UTF8.self)
        text.append("\n")
        try writeOut(text)
    }

    /// Writes to stdout in full (checked: a closed pipe or a full disk ends the command).
    func writeOut(_ text: String) throws {
        try StandardOutput.write(text)
    }

    // MARK: Reservations

    /// A list: JSON page or a table with the times in each store's time zone.
    func printList(_ page: Page<ReservationDetail>) throws {
        if json { return try printJSON(page) }
        let header = ["CODE", "WHEN (store time)", "STATUS", "CUSTOMER", "PARTY", "TOPIC", "STORE"]
        let rows = page.items.map { detail -> [Cell] in
            let r = detail.reservation
            return [
                Cell(r.confirmationCode.description),
                Cell(Self.span(r.startsAt, r.endsAt, in: detail.store)),
                Cell(r.status.rawValue, style: Self.style(of: r.status)),
                Cell(detail.customer.displayName),
                Cell(String(r.partySize), alignRight: true),
                Cell(r.topic),
                Cell(detail.store.name),
            ]
        }
        try writeOut(table(header: header, rows: rows))
        if page.items.isEmpty { note("no reservations") }
        if let cursor = page.nextCursor { note("more: --cursor \(cursor)") }
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
        if let notes = r.notes, !notes.isEmpty { lines.append(("Notes", Cell(notes))) }
        lines.append(("Version", Cell(String(r.version))))
        let width = lines.map(\.0.count).max() ?? 0
        var out = ""
        for (label, cell) in lines {
            out += label.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            out += render(cell) + "\n"
        }
        try writeOut(out)
    }

    // MARK: Tables

    struct Cell {
        var text: String
        var style: String? = nil
        var alignRight = false

        init(_ text: String, style: String? = nil, alignRight: Bool = false) {
            // One line per cell: a newline in a topic or name must not break the table.
            self.text = text.replacingOccurrences(of: "\n", with: " ")
            self.style = style
            self.alignRight = alignRight
        }
    }

    func render(_ cell: Cell) -> String {
        guard color, let style = cell.style else { return cell.text }
        return "\u{1B}[\(style)m\(cell.text)\u{1B}[0m"
    }

    /// Columns padded to their widest cell (in characters), two spaces apart.
    func table(header: [String], rows: [[Cell]]) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.text.count)
            }
        }
        func line(_ cells: [Cell]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let pad = String(repeating: " ", count: widths[index] - cell.text.count)
                let last = index == cells.count - 1
                let text = render(cell)
                parts.append(cell.alignRight ? pad + text : (last ? text : text + pad))
            }
            return parts.joined(separator: "  ") + "\n"
        }
        var out = line(header.map { Cell($0, style: "1") })
        for row in rows { out += line(row) }
        return out
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
