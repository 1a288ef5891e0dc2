import ArgumentParser
import CommandSupport
import Foundation
import SharedDefaults

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print one JSON line per change to KEY (or to any key) until interrupted.",
        discussion: """
            Each line is {"suite", "key", "old", "new", "at"}: old/new as JSON (null when \
            absent), at the RFC 3339 time the change was seen. Changes by any process are \
            reported. Exits 130 on SIGINT and 143 on SIGTERM, after the last whole line; \
            exits 1 with a message when the suite's container is removed.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key to watch; every key when omitted.") var key: String?

    func run() async throws {
        let store = try global.openStore(refresh: .notifications)
        for await change in store.changes(forKey: key) {
            try emit(JSONOutput.line(ChangeLine(change)))
        }
        // The sequence ends on a stop signal (CommandMain exits 130/143) or when the
        // container is gone, where nothing will ever change again.
        if store.isContainerRemoved {
            throw CommandError.failure(
                "the container of suite '\(store.suiteName)' (\(store.containerURL.path)) was removed; stopped watching"
            )
        }
    }
}

/// One line of `watch`: `{"at", "key", "new", "old", "suite"}`, an absent value as `null`.
struct ChangeLine: Encodable {
    var change: DefaultsChange

    init(_ change: DefaultsChange) { self.change = change }

    private enum CodingKeys: String, CodingKey { case suite, key, old, new, at }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(change.suite, forKey: .suite)
        try container.encode(change.key, forKey: .key)
        // Optional's own encoding: `null` when absent (encodeIfPresent would drop the key).
        try container.encode(change.oldValue, forKey: .old)
        try container.encode(change.newValue, forKey: .new)
        try container.encode(change.date, forKey: .at)
    }
}
