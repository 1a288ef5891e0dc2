public import CommandSupport
public import Foundation
import Models
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

    /// Says on stderr that `fetched` came from the offline cache, and how old it is.
    public func sayIfCached<Value>(_ fetched: Fetched<Value>, what: String) {
        guard case .cache(let fetchedAt, let reason) = fetched.origin else { return }
        warning(
            "offline: \(reason); showing \(what) saved \(Self.age(since: fetchedAt)) ago (\(RFC3339.string(from: fetchedAt)))"
        )
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

    /// One JSON document on stdout, the suite's encoding (sorted keys, RFC 3339 instants).
    public func printJSON(_ value: some Encodable) throws {
        let data = try ModelsJSON.makeEncoder().encode(value)
        var text = String(decoding: data, as: UTF8.self)
        text.append("\n")
        try writeOut(text)
    }

    /// Writes to stdout in full (checked: a closed pipe or a full disk ends the command).
    public func writeOut(_ text: String) throws {
        try StandardOutput.write(text)
    }

    /// Labelled lines, the labels padded to the widest: `Label  value` per line.
    public func labelled(_ lines: [(String, TextTable.Cell)]) -> String {
        let width = lines.map(\.0.count).max() ?? 0
        var out = ""
        for (label, cell) in lines {
            out += label.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            out += cell.rendered(color: color) + "\n"
        }
        return out
    }
}
