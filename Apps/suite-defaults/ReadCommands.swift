import ArgumentParser
import CommandSupport
import Foundation
import SharedDefaults

struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
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
        try reporting {
            let store = try global.openStore()
            guard let key else {
                emit(DefaultsValue.dictionary(store.storedValues()).jsonText(pretty: true))
                return
            }
            guard let value = store.storedValues()[key] else {
                throw CommandFailure.notFound(
                    "key '\(key)' does not exist in suite '\(store.suiteName)'"
                )
            }
            emit(global.common.json ? value.jsonText(pretty: true) : value.plainText)
        }
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

    func run() throws {
        try reporting {
            let store = try global.openStore()
            guard let value = store.storedValues()[key] else {
                throw CommandFailure.notFound(
                    "key '\(key)' does not exist in suite '\(store.suiteName)'"
                )
            }
            if global.common.json {
                emit(
                    DefaultsValue.dictionary(["key": .string(key), "type": .string(value.typeName)])
                        .jsonText()
                )
            } else {
                emit("Type is \(value.typeName)")
            }
        }
    }
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Write the suite to FILE (or stdout with -) as an XML property list, or JSON with --json.",
        discussion: """
            JSON is one flat object, {"key": value}, with values as `read --json` gives them \
            (dates RFC 3339, data base64). A suite never written exports {} (or an empty \
            dictionary). A file is replaced atomically.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file to write, or - for stdout.") var file: String

    func run() throws {
        try reporting {
            let store = try global.openStore()
            let suite = DefaultsValue.dictionary(store.storedValues())
            let text =
                global.common.json ? suite.jsonText(pretty: true) + "\n" : suite.propertyListXML()
            if file == "-" {
                FileHandle.standardOutput.write(Data(text.utf8))
                return
            }
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
            } catch {
                throw CommandFailure.failure("cannot write \(file): \(error.localizedDescription)")
            }
        }
    }
}

struct Domains: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the suites under the containers' root that hold settings, one per line."
    )

    @OptionGroup var global: GlobalOptions

    func run() throws {
        try reporting {
            let suites = try SuiteContainer.suitesWithStores()
            if global.common.json {
                let items = DefaultsValue.array(suites.map { .string($0) }).jsonText()
                emit("{\"items\":\(items),\"nextCursor\":null}")
            } else {
                for suite in suites { emit(suite) }
            }
        }
    }
}

struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search every suite's keys and values for WORD (case-insensitive).",
        discussion: """
            Prints `SUITE KEY = VALUE` per match (the value as JSON), or with --json \
            {"items": [{"suite", "key", "value"}], "nextCursor": null}. No match is a success.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The text to look for.") var word: String

    func run() throws {
        try reporting {
            var items: [DefaultsValue] = []
            var lines: [String] = []
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
                    let text = value.jsonText()
                    guard
                        key.localizedCaseInsensitiveContains(word)
                            || text.localizedCaseInsensitiveContains(word)
                    else { continue }
                    items.append(["suite": .string(suite), "key": .string(key), "value": value])
                    lines.append("\(suite) \(key) = \(text)")
                }
            }
            if global.common.json {
                emit(
                    "{\"items\":" + DefaultsValue.array(items).jsonText() + ",\"nextCursor\":null}"
                )
            } else {
                for line in lines { emit(line) }
            }
        }
    }
}
