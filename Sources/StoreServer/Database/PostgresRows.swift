internal import PostgresKit
internal import SQLKit

/// A PostgreSQL row of a prepared statement read as an SQLKit row, with the types our row
/// readers ask for (`String`, `Int64`, `Int`, `Bool`) decoded by their cell directly.
///
/// PostgresKit's own row (`PostgresRow.sql()`) sends every value through a generic
/// translation that casts the type to `PostgresDecodable` at run time, checks for Fluent's
/// enums and decimals, and looks the column up twice: about 4 % of the server's CPU for
/// show-by-code at 1,000 requests a second. For these four types the translation ends in
/// the same `PostgresCell.decode`, so the values are the same; any other type takes
/// PostgresKit's path.
struct PostgresStatementRow: SQLRow {
    private let row: PostgresRow
    private let cells: PostgresRandomAccessRow

    init(_ row: PostgresRow) {
        self.row = row
        self.cells = row.makeRandomAccess()
    }

    var allColumns: [String] { cells.map(\.columnName) }

    func contains(column: String) -> Bool { cells.contains(column) }

    func decodeNil(column: String) throws -> Bool {
        !cells.contains(column) || cells[column].bytes == nil
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        guard cells.contains(column) else {
            return try row.sql().decode(column: column, as: D.self)
        }
        let cell = cells[column]
        // Our schema has no user-defined types, whose strings PostgresKit reads as names.
        if D.self == String.self, !cell.dataType.isUserDefined {
            return unsafeBitCast(try cell.decode(String.self), to: D.self)
        }
        if D.self == Int64.self { return unsafeBitCast(try cell.decode(Int64.self), to: D.self) }
        if D.self == Int.self { return unsafeBitCast(try cell.decode(Int.self), to: D.self) }
        if D.self == Bool.self { return unsafeBitCast(try cell.decode(Bool.self), to: D.self) }
        return try row.sql().decode(column: column, as: D.self)
    }
}
