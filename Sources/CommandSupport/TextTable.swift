import Models

/// An aligned table for people on a terminal: columns padded to their widest cell (in
/// characters), two spaces apart, a bold header when colour is on, one line per row.
///
/// ```swift
/// var table = TextTable(header: ["GTIN", "TITLE", "PRICE"])
/// table.append([.init("4006381333931"), .init("Pencil"), .init("1.20 EUR", alignRight: true)])
/// try StandardOutput.write(table.render(color: Console.stdoutIsTerminal))
/// ```
public struct TextTable: Sendable {
    /// One cell: its text (newlines become spaces, every other control or format character
    /// is escaped), an optional ANSI style (`"32"`, `"1"`) used only with colour, and its
    /// alignment.
    public struct Cell: Sendable, Hashable {
        /// The text, safe for a terminal: on one line, or (``multiline``) with newlines and
        /// tabs kept.
        public var text: String
        /// The SGR parameters, such as `"31"` for red, or nil.
        public var style: String?
        /// Right-aligned (numbers) or left-aligned.
        public var alignRight: Bool
        /// Whether newlines and tabs are kept (notes in a block of labelled lines).
        public var multiline: Bool

        /// A cell. Its text usually comes from the server or a file, so nothing in it may
        /// drive the terminal: a newline must not break the table (it becomes a space, unless
        /// `multiline`), and escape sequences, other controls and bidi or other format
        /// characters are shown escaped (Models' `TextSafety`).
        public init(
            _ text: String,
            style: String? = nil,
            alignRight: Bool = false,
            multiline: Bool = false
        ) {
            let flat =
                multiline
                ? text.replacingOccurrences(of: "\r\n", with: "\n")
                : text.replacingOccurrences(of: "\r\n", with: " ")
                    .replacingOccurrences(of: "\n", with: " ")
            self.text = TextSafety.terminal(flat, multiline: multiline)
            self.style = style
            self.alignRight = alignRight
            self.multiline = multiline
        }

        /// The text, wrapped in its style when `color` is on.
        public func rendered(color: Bool) -> String {
            guard color, let style else { return text }
            return "\u{1B}[\(style)m\(text)\u{1B}[0m"
        }
    }

    /// The column titles.
    public var header: [String]
    /// The rows, each with at most as many cells as the header.
    public var rows: [[Cell]]
    /// Columns never narrowed to fit a width (by index): what a reader needs whole, such as
    /// a code to type or a time.
    public var wholeColumns: Set<Int>

    /// A table with `header` and `rows`; `wholeColumns` are never cut to fit.
    public init(header: [String], rows: [[Cell]] = [], wholeColumns: Set<Int> = []) {
        self.header = header
        self.rows = rows
        self.wholeColumns = wholeColumns
    }

    /// Adds a row.
    public mutating func append(_ row: [Cell]) { rows.append(row) }

    /// The table's lines, each ending in `\n`; the last column is not padded. With
    /// `width` (the terminal's columns), a table that would be wider is fitted: the widest
    /// left-aligned (text) columns are narrowed, their cells cut with `…`, so no row wraps.
    /// Widths are display columns (wide characters take two, combining marks none).
    public func render(color: Bool, width: Int? = nil) -> String {
        var widths = header.map { DisplayWidth.of($0) }
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], DisplayWidth.of(cell.text))
            }
        }
        if let width { widths = fit(widths, into: width) }
        func line(_ cells: [Cell]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() where index < widths.count {
                var shown = cell
                shown.text = DisplayWidth.truncate(cell.text, to: widths[index])
                let pad = String(
                    repeating: " ",
                    count: max(0, widths[index] - DisplayWidth.of(shown.text))
                )
                let last = index == cells.count - 1
                let text = shown.rendered(color: color)
                parts.append(cell.alignRight ? pad + text : (last ? text : text + pad))
            }
            return parts.joined(separator: "  ") + "\n"
        }
        var out = line(header.map { Cell($0, style: "1") })
        for row in rows { out += line(row) }
        return out
    }

    /// Which columns may be narrowed: text, not numbers (right-aligned in any row).
    private var shrinkable: [Bool] {
        header.indices.map { index in
            !rows.contains { row in index < row.count && row[index].alignRight }
        }
    }

    /// Column widths that fit `total` columns (two spaces between columns), one column at a
    /// time from the widest: first the text columns other than ``wholeColumns``, down to
    /// their title's width; then the whole columns too, down to their titles; then any text
    /// column down to 3 (`ab…`).
    func fit(_ widths: [Int], into total: Int) -> [Int] {
        let titles = header.map { max(3, DisplayWidth.of($0)) }
        let shrinkable = self.shrinkable
        var widths = widths
        func sum() -> Int { widths.reduce(0, +) + 2 * max(0, widths.count - 1) }
        let phases: [(Int) -> Bool] = [
            { shrinkable[$0] && !self.wholeColumns.contains($0) && widths[$0] > titles[$0] },
            { shrinkable[$0] && widths[$0] > titles[$0] },
            { shrinkable[$0] && widths[$0] > 3 },
        ]
        for allowed in phases {
            while sum() > total {
                guard
                    let widest = widths.indices.filter(allowed)
                        .max(by: { widths[$0] < widths[$1] })
                else { break }
                widths[widest] -= 1
            }
        }
        return widths
    }
}
