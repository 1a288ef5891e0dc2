import CommandSupport
import Foundation
import Models
import ProductImages
import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

/// Presentation: tables and drawings for people on a terminal, JSON for programs, messages
/// on stderr.
struct Output {
    /// JSON on stdout (asked for, or stdout is not a terminal).
    let json: Bool
    /// Colour: stdout is a terminal, `NO_COLOR` unset (or empty), `TERM` not `dumb`.
    let color: Bool
    /// Whether stdout is a terminal that can show a drawing (not `TERM=dumb`).
    let canDraw: Bool
    let quiet: Bool

    init(options: CommonOptions) {
        let terminal = isatty(1) == 1
        json = options.json || !terminal
        let noColor = getenv("NO_COLOR").map { String(cString: $0) } ?? ""
        let term = getenv("TERM").map { String(cString: $0) } ?? ""
        color = terminal && !options.json && noColor.isEmpty && term != "dumb"
        canDraw = terminal && !options.json && term != "dumb"
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

    // MARK: Products

    /// A page of products: JSON, or a table.
    func printList(_ page: Page<Product>) throws {
        if json { return try printJSON(page) }
        var table = TextTable(header: ["GTIN", "TITLE", "BRAND", "PRICE", "STATUS", "SKU"])
        for product in page.items {
            table.append([
                TextTable.Cell(product.gtin.description),
                TextTable.Cell(product.title),
                TextTable.Cell(product.brand ?? ""),
                TextTable.Cell(product.price.description, alignRight: true),
                TextTable.Cell(product.status.rawValue, style: Self.style(of: product.status)),
                TextTable.Cell(product.sku),
            ])
        }
        try writeOut(table.render(color: color))
        if page.items.isEmpty { note("no products") }
        if let cursor = page.nextCursor { note("more: --cursor \(cursor)") }
    }

    /// One product: JSON, or labelled lines.
    func printProduct(_ product: Product) throws {
        if json { return try printJSON(product) }
        var lines: [(String, TextTable.Cell)] = [
            ("Product", TextTable.Cell(product.title, style: "1")),
            ("GTIN", TextTable.Cell("\(product.gtin) (GTIN-14 \(product.gtin.gtin14))")),
        ]
        if let brand = product.brand, !brand.isEmpty {
            lines.append(("Brand", TextTable.Cell(brand)))
        }
        lines += [
            ("SKU", TextTable.Cell(product.sku)),
            ("Price", TextTable.Cell(product.price.description)),
            (
                "Status",
                TextTable.Cell(product.status.rawValue, style: Self.style(of: product.status))
            ),
        ]
        let width = lines.map(\.0.count).max() ?? 0
        var out = ""
        for (label, cell) in lines {
            out += label.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            out += cell.rendered(color: color) + "\n"
        }
        try writeOut(out)
    }

    /// Draws `image` at most `columns` cells wide (and never wider than the terminal).
    func draw(_ image: PNGImage, columns: Int) throws {
        let width = min(columns, Self.terminalColumns())
        let drawing = TerminalImage(columns: width, style: color ? .trueColor : .monochrome)
            .render(image)
        try writeOut(drawing)
    }

    /// The terminal's width in cells: stdout's window size, else `COLUMNS`, else 80.
    static func terminalColumns() -> Int {
        var size = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let text = getenv("COLUMNS").map({ String(cString: $0) }), let columns = Int(text),
            columns > 0
        {
            return columns
        }
        return 80
    }

    /// ANSI styles by status.
    static func style(of status: Product.Status) -> String? {
        switch status {
        case .active: "32"
        case .draft: "2"
        case .discontinued: "33"
        case .recalled: "1;31"
        }
    }
}
