import ArgumentParser
import CommandSupport
import Foundation
import Models
import Plumbing
import SharedDefaults

struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Print one key's value, or the whole suite as JSON.",
        discussion: """
            With KEY, a string, number or date prints plainly (booleans as 1/0, dates RFC 3339, \
            data as hex) and an array or dictionary as JSON; --json prints the value as JSON. \
            Without KEY, the suite prints as one JSON object ({} for a suite never written). \
            Exits 3 when KEY has no value.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key to read; all keys when omitted.") var key: String?

    func run() throws {
        let store = try global.openStore()
        guard let key else {
            try emit(JSONOutput.text(DefaultsValue.dictionary(store.storedValues()), pretty: true))
            return
        }
        guard let value = store.storedValues()[key] else {
            throw CommandError.notFound("key '\(key)' does not exist in suite '\(store.suiteName)'")
        }
        try emit(global.common.json ? JSONOutput.text(value, pretty: true) : value.plainText())
    }
}

struct ReadType: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read-type",
        abstract:
            "Print the type of a key's value (string, integer, float, boolean, date, data, array, dictionary).",
        discussion: "Exits 3 when KEY has no value."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key.") var key: String

    /// `{"key", "type"}` with --json.
    struct KeyType: Encodable {
        var key: String
        var type: String
    }

    func run() throws {
        let store = try global.openStore()
        guard let value = store.storedValues()[key] else {
            throw CommandError.notFound("key '\(key)' does not exist in suite '\(store.suiteName)'")
        }
        if global.common.json {
            try emit(JSONOutput.line(KeyType(key: key, type: value.typeName)))
        } else {
            try emit("Type is \(value.typeName)")
        }
    }
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract:
            "Write the suite to FILE (or stdout with -) as an XML property list, or JSON with --json.",
        discussion: """
            JSON is one flat object, {"key": value}, with values as `read --json` gives them \
            (dates RFC 3339, data base64). A suite never written exports {} (or an empty \
            dictionary). A regular file is replaced atomically (through a symbolic link, the \
            file it names); a directory, FIFO or device is refused.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file to write, or - for stdout.") var file: String

    func run() throws {
        let store = try global.openStore()
        let suite = DefaultsValue.dictionary(store.storedValues())
        let text =
            global.common.json
            ? try JSONOutput.text(suite, pretty: true) + "\n" : suite.propertyListXML()
        if file == "-" {
            try StandardOutput.write(text)
            return
        }
        do {
            try FileIO.replaceFile(atPath: file, with: Array(text.utf8))
        } catch {
            throw CommandError.failure("cannot export to \(file): \(error)")
        }
    }
}

struct Domains: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "domains",
        abstract: "List the suites under the containers' root that hold settings, one per line."
    )

    @OptionGroup var global: GlobalOptions

    func run() throws {
        let suites = try SuiteContainer.suitesWithStores()
        if global.common.json {
            try emit(JSONOutput.line(Page(items: suites)))
        } else {
            for suite in suites { try emit(suite) }
        }
    }
}

struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Search every suite's keys and values for WORD (case-insensitive).",
        discussion: """
            Prints `SUITE KEY = VALUE` per match (the value as JSON), or with --json \
            {"items": [{"suite", "key", "value"}], "nextCursor": null}. No match is a success.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The text to look for.") var word: String

    /// One match in `--json` output.
    struct Match: Codable {
        var suite: String
        var key: String
        var value: DefaultsValue
        /// The value as one line of JSON, for people (not part of the JSON).
        var text = ""

        private enum CodingKeys: String, CodingKey { case suite, key, value }
    }

    func run() throws {
        var matches: [Match] = []
        for suite in try SuiteContainer.suitesWithStores() {
            let store: SharedStore
            do {
                store = try SharedStore(
                    suite: suite,
                    refresh: .statEveryRead,
                    logger: global.common.makeLogger(label: "suite-defaults")
                )
            } catch {
                Console.warning("skipping suite '\(suite)': \(error)")
                continue
            }
            let values = store.storedValues()
            for key in values.keys.sorted() {
                let value = values[key]!
                let text = try JSONOutput.text(value)
                guard
                    key.localizedCaseInsensitiveContains(word)
                        || text.localizedCaseInsensitiveContains(word)
                else { continue }
                matches.append(Match(suite: suite, key: key, value: value, text: text))
            }
        }
        if global.common.json {
            try emit(JSONOutput.line(Page(items: matches)))
        } else {
            for match in matches {
                try emit(
                    TextSafety.terminal("\(match.suite) \(match.key) = \(match.text)")
                )
            }
        }
    }
}
