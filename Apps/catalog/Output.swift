import ClientCommands
import CommandSupport
import Foundation
import Models
import PNG
import ProductImages
import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

/// `catalog`'s printers: products as tables or labelled lines, product images as drawings.
extension Output {
    // MARK: Products

    /// A page of products: JSON (one shape online and offline), or a table fitted to the
    /// terminal with the next page as a command to run.
    func printList(_ fetched: Fetched<Page<Product>>) throws {
        if json { return try printPage(fetched) }
        let page = fetched.value
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
        try writeOut(table.render(color: color, width: Console.stdoutColumns))
        if page.items.isEmpty { note("no products") }
        if let cursor = page.nextCursor {
            note("next page: \(Self.command(replacing: "--cursor", with: cursor))")
        }
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
        try writeOut(labelled(lines))
    }

    /// Draws `image` at most `columns` cells wide (and never wider than the terminal).
    func draw(_ image: PNGImage, columns: Int) throws {
        let width = min(columns, Self.terminalColumns())
        let drawing = TerminalImage(columns: width, style: Self.imageStyle(color: color))
            .render(image)
        try writeOut(drawing)
    }

    /// How a drawing uses colour: none under `NO_COLOR` (shades); 24-bit colour when the
    /// terminal says it has it (`COLORTERM` truecolor or 24bit, or a `TERM` with 256 or
    /// direct colour); else the 16 standard colours (`TERM=linux`, `vt100`, `screen`, …).
    static func imageStyle(
        color: Bool,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> TerminalImage.Style {
        guard color else { return .monochrome }
        let colorTerm = environment["COLORTERM"]?.lowercased() ?? ""
        let term = environment["TERM"]?.lowercased() ?? ""
        if colorTerm == "truecolor" || colorTerm == "24bit" || term.contains("256color")
            || term.contains("direct") || term.contains("truecolor")
        {
            return .trueColor
        }
        return .sixteenColors
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
