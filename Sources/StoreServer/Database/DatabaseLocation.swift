public import Foundation

/// Where the store server keeps its data: a SQLite file (one instance) or a PostgreSQL
/// database (one or several instances).
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    /// A SQLite database file (created with its directory when missing).
    case sqlite(path: String)
    /// A PostgreSQL server, `postgres://user[:password]@host[:port]/database[?sslmode=disable]`.
    case postgres(url: String)

    /// Reads `--database`: a `postgres://` or `postgresql://` URL, else a file path.
    public init(argument: String) {
        let lower = argument.lowercased()
        if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
            || lower.hasPrefix("postgres+uds://") || lower.hasPrefix("postgresql+uds://")
        {
            self = .postgres(url: argument)
        } else {
            self = .sqlite(path: argument)
        }
    }

    /// The scheme of `argument` when it is a URL this server cannot use (`mysql://x`), else
    /// nil: a URL is a PostgreSQL one or an error, never a SQLite file named after it.
    public static func unsupportedScheme(_ argument: String) -> String? {
        guard let range = argument.range(of: "://") else { return nil }
        let scheme = argument[..<range.lowerBound].lowercased()
        guard !scheme.isEmpty, scheme.first!.isLetter,
            scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) })
        else { return nil }
        let known = ["postgres", "postgresql", "postgres+uds", "postgresql+uds"]
        return known.contains(scheme) ? nil : scheme
    }

    /// `$SHOPFLOOR_HOME/server/store.sqlite` (the suite's home: `SHOPFLOOR_HOME`, else
    /// `$XDG_DATA_HOME/shopfloor`, else `~/.local/share/shopfloor`).
    public static func defaultSQLite(
        environment: [String: String] = ProcessInfo.processInfo.environment
    )
        -> DatabaseLocation
    {
        let home: String
        if let value = environment["SHOPFLOOR_HOME"], !value.isEmpty {
            home = value
        } else if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            home = xdg + "/shopfloor"
        } else {
            home = (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share/shopfloor"
        }
        return .sqlite(path: home + "/server/store.sqlite")
    }

    /// `sqlite` or `postgres`.
    public var kindName: String {
        switch self {
        case .sqlite: return "sqlite"
        case .postgres: return "postgres"
        }
    }

    /// The location without a password.
    public var description: String {
        switch self {
        case .sqlite(let path): return path
        case .postgres(let url):
            guard var components = URLComponents(string: url) else { return "postgres://…" }
            if components.password != nil { components.password = "***" }
            return components.string ?? "postgres://…"
        }
    }
}

/// An error of the database layer, naming the database (never its password).
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable {
        /// The location cannot be used (bad URL, unwritable directory).
        case invalidLocation
        /// The database could not be reached or refused the connection.
        case unavailable
        /// The schema is newer than this server (a later version migrated it).
        case schemaTooNew
        /// A migration failed.
        case migrationFailed
    }

    /// What went wrong.
    public var code: Code
    /// A message naming the database.
    public var message: String
    /// The underlying error.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// The message and its cause.
    public var description: String {
        if let cause { return "\(message): \(String(describing: cause).prefix(300))" }
        return message
    }
}
