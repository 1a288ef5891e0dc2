import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import Models
import SuiteClient

struct Config: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show the active client configuration: versions, flags and the customer form.",
        discussion: """
            Flags are resolved for --store (default: your home store; none: global values). \
            Offline, the last good copy is shown and stderr says how old it is.

            Example: reservations config --store berlin-kurfuerstendamm
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Resolve flags for this store: its id or short name.",
            valueName: "store"
        )
    )
    var store: String?

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if let store, store.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("--store needs a store id or short name")
        }
    }

    func run() async throws {
        try await withClient(options) { client, output in
            var storeID = client.homeStoreID
            if let store {
                storeID = try await client.resolveStore(store.trimmingCharacters(in: .whitespaces))
            }
            let fetched = try await client.clientConfiguration(store: storeID)
            output.sayIfCached(fetched, what: "the configuration")
            let response = fetched.value
            if output.json { return try output.printJSON(response) }
            let configuration = response.configuration
            var text = ""
            text += "server           \(client.server)\n"
            text += "configVersion    \(configuration.configVersion)\n"
            text +=
                "minimum version  \(configuration.minimumClientVersion) (this is \(SuiteVersion.current))\n"
            if let store = response.store {
                let name = TextSafety.terminal(store.name)
                let zone = TextSafety.terminal(store.timeZone)
                text += "store            \(name) (\(store.id.uuidString), \(zone))\n"
            } else {
                text += "store            none (global values)\n"
            }
            text += "\nflags:\n"
            let width = response.flags.keys.map(\.count).max() ?? 0
            for (name, value) in response.flags.sorted(by: { $0.key < $1.key }) {
                let padded = name.padding(toLength: width, withPad: " ", startingAt: 0)
                text += TextSafety.terminal("  \(padded)  \(value)") + "\n"
            }
            text += "\ncustomer form:\n"
            let rows = configuration.customerFormFields.map { field -> [Output.Cell] in
                var rule = field.kind.rawValue
                if let options = field.options { rule += " (\(options.joined(separator: "/")))" }
                if let pattern = field.pattern { rule += " matching \(pattern)" }
                return [
                    Output.Cell(field.name), Output.Cell(field.label),
                    Output.Cell(field.required ? "yes" : "no"), Output.Cell(rule),
                ]
            }
            text += output.table(header: ["FIELD", "LABEL", "REQUIRED", "KIND"], rows: rows)
            try output.writeOut(text)
        }
    }
}
