/// An aligned table for people on a terminal: columns padded to their widest cell (in
/// characters), two spaces apart, a bold header when colour is on, one line per row.
///
/// ```swift
/// var table = TextTable(header: ["GTIN", "TITLE", "PRICE"])
/// table.append([.init("4006381333931"), .init("Pencil"), .init("1.20 EUR", alignRight: true)])
/// try StandardOutput.write(table.render(color: Console.stdoutIsTerminal))
/// ```
public struct TextTable: Sendable {
    /// One cell: its text (newlines become spaces), an optional ANSI style (`"32"`, `"1"`)
    /// used only with colour, and its alignment.
    public struct Cell: Sendable, Hashable {
        /// The text, on one line.
        public var text: String
        /// The SGR parameters, such as `"31"` for red, or nil.
        public var style: String?
        /// Right-aligned (numbers) or left-aligned.
        public var alignRight: Bool

        /// A cell; a newline in `text` must not break the table, so it becomes a space.
        public init(_ text: String, style: String? = nil, alignRight: Bool = false) {
            self.text = text.replacingOccurrences(of: "\r\n", with: " ")
                .replacingOccurrences(of: "\n", with: " ")
            self.style = style
            self.alignRight = alignRight
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

    /// A table with `header` and `rows`.
    public init(header: [String], rows: [[Cell]] = []) {
        self.header = header
        self.rows = rows
    }

    /// Adds a row.
    public mutating func append(_ row: [Cell]) { rows.append(row) }

    /// The table's lines, each ending in `\n`; the last column is not padded.
    public func render(color: Bool) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.text.count)
            }
        }
        func line(_ cells: [Cell]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() where index < widths.count {
                let pad = String(repeating: " ", count: widths[index] - cell.text.count)
                let last = index == cells.count - 1
                let text = cell.rendered(color: color)
                parts.append(cell.alignRight ? pad + text : (last ? text : text + pad))
            }
            return parts.joined(separator: "  ") + "\n"
        }
        var out = line(header.map { Cell($0, style: "1") })
        for row in rows { out += line(row) }
        return out
    }
}
