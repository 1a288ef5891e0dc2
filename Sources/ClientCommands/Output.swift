public import CommandSupport
public import Foundation
public import Models
public import SuiteClient

#if canImport(Glibc)
    import Glibc
#endif

/// Presentation for a client app's command: tables and drawings for people on a terminal,
/// JSON for programs, messages on stderr. Each app adds its own printers in an extension.
public struct Output: Sendable {
    /// JSON on stdout (asked for, or stdout is not a terminal).
    public let json: Bool
    /// Colour: stdout is a terminal, `NO_COLOR` unset (or empty), `TERM` not `dumb`, no
    /// `--json`.
    public let color: Bool
    /// Whether stdout is a terminal that can show a drawing (not `TERM=dumb`, no `--json`).
    public let canDraw: Bool
    /// `--quiet`: notes are dropped, warnings and errors still shown.
    public let quiet: Bool

    /// The presentation the common flags and the environment ask for.
    public init(options: CommonOptions) {
        let terminal = isatty(1) == 1
        json = options.json || !terminal
        let noColor = getenv("NO_COLOR").map { String(cString: $0) } ?? ""
        let term = getenv("TERM").map { String(cString: $0) } ?? ""
        color = terminal && !options.json && noColor.isEmpty && term != "dumb"
        canDraw = terminal && !options.json && term != "dumb"
        quiet = options.quiet
    }

    // MARK: stderr

    /// `warning: TEXT` on stderr (also with `--quiet`).
    public func warning(_ text: String) { Console.warning(text) }

    /// A note for people; `--quiet` drops it.
    public func note(_ text: String) { if !quiet { Console.note(text) } }

    /// Says on stderr that `fetched` came from the offline cache, and exactly what it is:
    /// the same query's saved answer with its age, or a partial list from kept data with
    /// its count and the span the data was kept in.
    public func sayIfCached<Value>(_ fetched: Fetched<Value>, what: String) {
        switch fetched.origin {
        case .server: return
        case .cache(let fetchedAt, let reason):
            warning(
                "offline: \(reason); showing \(what) as saved \(Self.age(since: fetchedAt)) ago (\(RFC3339.string(from: fetchedAt)))"
            )
        case .kept(let kept, let reason):
            warning(
                "offline: \(reason); this query's answer was never saved, so this is a PARTIAL list: the \(kept.count) kept \(kept.count == 1 ? "entry" : "entries") that match, from data kept \(Self.age(since: kept.newest)) to \(Self.age(since: kept.oldest)) ago (\(RFC3339.string(from: kept.oldest)) to \(RFC3339.string(from: kept.newest))); the server may hold more"
            )
        }
    }

    /// A page as JSON, one shape online and offline: `items`, `nextCursor`, and `offline`
    /// (null online; else what the answer is: `saved` with `savedAt`, or `partial` with
    /// `count`, `keptFrom`, `keptUntil`, and the `reason`).
    public func printPage<Item: Encodable & Sendable>(_ fetched: Fetched<Page<Item>>) throws {
        try printJSON(PageJSON(page: fetched.value, origin: fetched.origin))
    }

    /// `12 s`, `5 min`, `3 h 4 min`, `2 days`.
    public static func age(since date: Date, now: Date = Date()) -> String {
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

    /// One JSON document on stdout through the suite's one encoder (``JSONOutput``: sorted
    /// keys, RFC 3339 instants, C1 and bidi controls escaped).
    public func printJSON(_ value: some Encodable) throws {
        try writeOut(try JSONOutput.line(value) + "\n")
    }

    /// This command line again, with `option` set to `value`: the next page, ready to run.
    public static func command(
        replacing option: String,
        with value: String,
        arguments: [String] = CommandLine.arguments
    ) -> String {
        var words = [URL(fileURLWithPath: arguments.first ?? "reservations").lastPathComponent]
        var rest = Array(arguments.dropFirst())
        if let index = rest.firstIndex(of: option) {
            rest.removeSubrange(index...min(index + 1, rest.count - 1))
        }
        rest.removeAll { $0.hasPrefix(option + "=") }
        words += rest + [option, value]
        return words.map(shellQuoted).joined(separator: " ")
    }

    /// A word as a POSIX shell reads it back: bare when safe, else in single quotes.
    public static func shellQuoted(_ word: String) -> String {
        let safe = word.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || "-_./:=@+,%".unicodeScalars.contains($0)
        }
        if safe, !word.isEmpty { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Writes to stdout in full (checked: a closed pipe or a full disk ends the command).
    public func writeOut(_ text: String) throws {
        try StandardOutput.write(text)
    }

    /// Labelled lines, the labels padded to the widest: `Label  value` per line; the further
    /// lines of a multi-line cell (notes) are indented under the first.
    public func labelled(_ lines: [(String, TextTable.Cell)]) -> String {
        let width = lines.map(\.0.count).max() ?? 0
        let indent = String(repeating: " ", count: width + 2)
        var out = ""
        for (label, cell) in lines {
            out += label.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            out +=
                cell.rendered(color: color).replacingOccurrences(of: "\n", with: "\n" + indent)
                + "\n"
        }
        return out
    }
}

/// ``Output/printPage(_:)``'s document.
struct PageJSON<Item: Encodable & Sendable>: Encodable {
    var page: Page<Item>
    var origin: FetchOrigin

    struct Offline: Encodable {
        var kind: String
        var reason: String
        var savedAt: Date?
        var count: Int?
        var keptFrom: Date?
        var keptUntil: Date?
    }

    private enum CodingKeys: String, CodingKey { case items, nextCursor, offline }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(page.items, forKey: .items)
        // Present even when null: one shape whatever the network.
        try container.encode(page.nextCursor, forKey: .nextCursor)
        let offline: Offline? =
            switch origin {
            case .server: nil
            case .cache(let savedAt, let reason):
                Offline(kind: "saved", reason: reason, savedAt: savedAt)
            case .kept(let kept, let reason):
                Offline(
                    kind: "partial",
                    reason: reason,
                    count: kept.count,
                    keptFrom: kept.oldest,
                    keptUntil: kept.newest
                )
            }
        try container.encode(offline, forKey: .offline)
    }
}
