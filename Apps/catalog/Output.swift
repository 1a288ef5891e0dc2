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
        try writeOut(labelled(lines))
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
