import ChildProcesses
import Foundation
import Testing

/// Issue 28, point 5: every example in every app's help, at every level, reads as one
/// unbroken command at 80 columns (ArgumentParser wraps any line longer than the terminal).
@Suite("Help at 80 columns")
struct HelpWidthTests {
    static let apps = ["scan", "suite-defaults", "reservations", "catalog", "store-server"]

    /// `command --help` rendered for a terminal `columns` wide.
    static func help(_ command: [String], columns: Int) async throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = String(columns)
        let run = try await CommandRunner.run(
            CommandRunner.builtBinary(command[0]),
            Array(command.dropFirst()) + ["--help"],
            environment: environment
        )
        #expect(run.status == 0, "\(command.joined(separator: " ")) --help: \(run.stderr)")
        return run.stdout
    }

    /// The subcommands a help text lists (the first word of each entry).
    static func subcommands(_ help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        return help[start.upperBound...].components(separatedBy: "\n\n")[0]
            .split(separator: "\n")
            .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
            .filter { $0 != "help" }
    }

    /// The example lines of a help text: `Example: …` lines and the lines of an `Examples:`
    /// (or a bare `Example:`) block up to the next blank line.
    static func examples(_ help: String) -> [String] {
        var found: [String] = []
        var inBlock = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "Examples:" || trimmed == "Example:" {
                inBlock = true
            } else if trimmed.isEmpty || trimmed.hasPrefix("USAGE:") {
                inBlock = false
            } else if inBlock || trimmed.hasPrefix("Example: ") {
                found.append(String(line))
            }
        }
        return found
    }

    @Test("Every example line of every command's help fits 80 columns unbroken", arguments: apps)
    func examplesFit(app: String) async throws {
        var pending = [[app]]
        var checked = 0
        while let command = pending.popLast() {
            let wide = try await Self.help(command, columns: 300)
            let narrow = Set(
                try await Self.help(command, columns: 80).split(separator: "\n").map(String.init)
            )
            for line in Self.examples(wide) {
                checked += 1
                #expect(line.count < 80, "\(command.joined(separator: " ")): \(line)")
                let unbroken = narrow.contains(line)
                #expect(unbroken, "\(command.joined(separator: " ")) breaks at 80 columns: \(line)")
            }
            pending += Self.subcommands(wide).map { command + [$0] }
        }
        #expect(checked > 0, "no examples found in \(app)'s help")
    }
}
