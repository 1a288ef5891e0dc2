import ArgumentParser
import Models

/// "Did you mean" for a mistyped subcommand (`reservations lst`): ArgumentParser suggests
/// only options, and answers an unknown subcommand with "Unexpected argument".
enum UnknownSubcommand {
    /// The message for an unknown subcommand (usage included).
    struct Found {
        var message: String
    }

    /// What to print for an unknown subcommand among `arguments`, or nil when the first word
    /// at each level names a subcommand (or is an option or a value).
    static func find(in arguments: [String], root: any ParsableCommand.Type) -> Found? {
        var current = root
        var path = [name(of: root)]
        for argument in arguments {
            if argument == "--" || argument.hasPrefix("-") { return nil }
            let subcommands = current.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }
            if let next = subcommands.first(where: { names(of: $0).contains(argument) }) {
                current = next
                path.append(name(of: next))
                continue
            }
            let candidates = subcommands.flatMap { names(of: $0) }
            let close =
                candidates
                .map { ($0, distance($0, argument)) }
                .filter { $0.1 <= max(1, min(2, argument.count / 2)) || $0.0.hasPrefix(argument) }
                .sorted { $0.1 < $1.1 }
                .map(\.0)
            let command = path.joined(separator: " ")
            var text = "error: '\(TextSafety.terminal(argument))' is not a \(command) command"
            if let best = close.first {
                text += "; did you mean '\(best)'?"
            }
            text += "\nUsage: \(root.usageString(for: current))\n"
            text += "  See '\(command) --help' for the commands.\n"
            return Found(message: text)
        }
        return nil
    }

    /// `reservations reschedule`: the names from `root` down to `target`.
    static func path(to target: any ParsableCommand.Type, from root: any ParsableCommand.Type)
        -> String
    {
        func walk(_ node: any ParsableCommand.Type, _ names: [String]) -> [String]? {
            if node == target { return names }
            for child in node.configuration.subcommands {
                if let found = walk(child, names + [name(of: child)]) { return found }
            }
            return nil
        }
        return (walk(root, [name(of: root)]) ?? [name(of: root)]).joined(separator: " ")
    }

    private static func name(of command: any ParsableCommand.Type) -> String {
        command.configuration.commandName ?? String(describing: command).lowercased()
    }

    private static func names(of command: any ParsableCommand.Type) -> [String] {
        [name(of: command)] + command.configuration.aliases
    }

    /// Levenshtein distance (the names are short).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var row = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                row[j] = min(
                    previous[j] + 1,
                    row[j - 1] + 1,
                    previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                )
            }
            previous = row
        }
        return previous[b.count]
    }
}
