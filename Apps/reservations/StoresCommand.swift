import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import Models
import SuiteClient

struct Stores: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stores",
        abstract: "List the stores you work for, with the short names --store takes.",
        discussion: """
            The server decides which stores you see (an administrator sees every store); \
            your home store is marked with *. Offline, the last list kept is shown and stderr \
            says how old it is.

            Example: reservations list --store berlin-kurfuerstendamm
            """
    )

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await withClient(options) { client, output in
            let fetched = try await client.stores()
            output.sayIfCached(fetched, what: "your stores")
            let stores = fetched.value.sorted {
                ($0.shortName ?? $0.name, $0.id.uuidString) < (
                    $1.shortName ?? $1.name, $1.id.uuidString
                )
            }
            // The same shape online and offline: the stores as the server describes them.
            if output.json { return try output.printJSON(stores) }
            let home = client.homeStoreID
            let rows = stores.map { store -> [Output.Cell] in
                [
                    Output.Cell(store.id == home ? "*" : ""),
                    Output.Cell(store.shortName ?? "-"),
                    Output.Cell(store.name),
                    Output.Cell(store.timeZone),
                    Output.Cell("\(store.market)/\(store.region)"),
                    Output.Cell(store.id.uuidString),
                ]
            }
            try output.writeOut(
                output.table(
                    header: ["", "SHORT NAME", "NAME", "TIME ZONE", "MARKET", "ID"],
                    rows: rows
                )
            )
            if stores.isEmpty { output.note("no stores: ask an administrator to add you to one") }
        }
    }
}
