import ArgumentParser
import CommandSupport
import Foundation
import Plumbing
import SharedDefaults

struct Write: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract:
            "Set a key: write KEY [-string|-int|-float|-bool|-date|-data|-array|-dict|-json] VALUE...",
        discussion: """
            Without a type flag the value is a string. -int and -float take a number, -bool \
            true/false/yes/no/1/0, -date ISO 8601 (2026-11-23T07:00:00Z), -data hex, -json any \
            JSON value. -array takes elements and -dict key/value pairs; each element or value \
            is a string unless a type flag precedes it (-array -int 1 -string two). \
            -array-add appends to an array and -dict-add adds to a dictionary. Options go \
            before KEY (before or after `write`); everything from KEY on is the value.
            """
    )

    /// The options given before `write` (the root command parses those).
    @ParentCommand var root: SuiteDefaults
    /// The options given between `write` and KEY.
    @OptionGroup var options: VerbOptions
    @Argument(
        parsing: .captureForPassthrough,
        help: "KEY, an optional type flag, then the value(s)."
    )
    var arguments: [String] = []

    func run() throws {
        if arguments.first == "--help" || arguments.first == "-h" {
            throw CleanExit.helpRequest(self)
        }
        var arguments = arguments[...]
        // `write -- KEY ...` is accepted too, for a KEY that starts with a dash.
        if arguments.first == "--" { arguments.removeFirst() }
        guard let key = arguments.first else {
            throw CommandError.usage("write needs a KEY and a value")
        }
        let change = try WriteValue.parse(Array(arguments.dropFirst()))
        let store = try options.overriding(root.global).openStore()
        try store.update { values in
            switch change {
            case .set(let value): values[key] = value
            case .arrayAdd(let elements):
                switch values[key] {
                case nil: values[key] = .array(elements)
                case .array(let existing): values[key] = .array(existing + elements)
                case .some(let other):
                    throw CommandError.failure(
                        "cannot add to '\(key)': it holds a \(other.typeName), not an array"
                    )
                }
            case .dictionaryAdd(let entries):
                switch values[key] {
                case nil: values[key] = .dictionary(entries)
                case .dictionary(let existing):
                    values[key] = .dictionary(existing.merging(entries) { _, new in new })
                case .some(let other):
                    throw CommandError.failure(
                        "cannot add to '\(key)': it holds a \(other.typeName), not a dictionary"
                    )
                }
            }
        }
    }
}

/// The suite's options as given after `write` or `increment`, whose arguments from KEY on are
/// their own syntax (single-dash type flags, negative amounts): the parser hands them over
/// as they are, so options must come before KEY. Given on both sides of the verb, these win.
struct VerbOptions: ParsableArguments {
    @Option(name: .long, help: "The suite (app group) name; else SHOPFLOOR_SUITE, else shopfloor.")
    var suite: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Give up after waiting this long for another tool's change.",
            valueName: "seconds"
        )
    )
    var lockTimeout: Double?

    @Flag(help: "Print JSON on stdout.") var json = false
    @Flag(name: .shortAndLong, help: "Print only errors on stderr.") var quiet = false
    @Flag(name: .shortAndLong, help: "Log details on stderr.") var verbose = false

    mutating func validate() throws {
        if let lockTimeout, !(lockTimeout.isFinite && (0...86_400).contains(lockTimeout)) {
            throw ValidationError("--lock-timeout must be between 0 and 86400 seconds")
        }
    }

    /// `global` with these options applied over it.
    func overriding(_ global: GlobalOptions) -> GlobalOptions {
        var merged = global
        if let suite { merged.suite = suite }
        if let lockTimeout { merged.lockTimeout = lockTimeout }
        if json { merged.common.json = true }
        if quiet { merged.common.quiet = true }
        if verbose { merged.common.verbose = true }
        return merged
    }
}

/// The value part of `write`, parsed from raw arguments (single-dash type flags as macOS
/// `defaults` has them, which an option parser would take for options).
enum WriteValue: Equatable {
    case set(DefaultsValue)
    case arrayAdd([DefaultsValue])
    case dictionaryAdd([String: DefaultsValue])

    static let scalarFlags: Set<String> = [
        "-string", "-int", "-integer", "-float", "-double", "-real", "-bool", "-boolean", "-date",
        "-data",
        "-json",
    ]

    static func parse(_ tokens: [String]) throws -> WriteValue {
        guard let first = tokens.first else {
            throw CommandError.usage("write needs a value after KEY")
        }
        switch first {
        case "-array", "-array-add":
            let elements = try parseElements(Array(tokens.dropFirst()))
            return first == "-array" ? .set(.array(elements)) : .arrayAdd(elements)
        case "-dict", "-dict-add":
            let entries = try parseEntries(Array(tokens.dropFirst()))
            return first == "-dict" ? .set(.dictionary(entries)) : .dictionaryAdd(entries)
        default:
            if scalarFlags.contains(first) {
                guard tokens.count == 2 else {
                    throw CommandError.usage(
                        "\(first) takes exactly one value, got \(tokens.count - 1)"
                    )
                }
                return .set(try scalar(flag: first, tokens[1]))
            }
            if first.hasPrefix("-") && first.count > 1 && Double(first) == nil {
                throw CommandError.usage(
                    "unknown type flag '\(first)'; use -string, -int, -float, -bool, -date, -data, -array, -dict or -json (write KEY -string \(first) for a string)"
                )
            }
            guard tokens.count == 1 else {
                throw CommandError.usage(
                    "several values need -array or -dict (got \(tokens.count))"
                )
            }
            return .set(.string(first))
        }
    }

    /// Array elements: strings, or typed by a preceding scalar flag.
    static func parseElements(_ tokens: [String]) throws -> [DefaultsValue] {
        var elements: [DefaultsValue] = []
        var index = 0
        while index < tokens.count {
            let token = tokens[index]
            if scalarFlags.contains(token) {
                guard index + 1 < tokens.count else {
                    throw CommandError.usage("\(token) at the end needs a value")
                }
                elements.append(try scalar(flag: token, tokens[index + 1]))
                index += 2
            } else {
                elements.append(.string(token))
                index += 1
            }
        }
        return elements
    }

    /// Dictionary entries: KEY VALUE pairs, each value a string or typed by a flag.
    static func parseEntries(_ tokens: [String]) throws -> [String: DefaultsValue] {
        var entries: [String: DefaultsValue] = [:]
        var index = 0
        while index < tokens.count {
            let key = tokens[index]
            guard index + 1 < tokens.count else {
                throw CommandError.usage("-dict key '\(key)' has no value")
            }
            let token = tokens[index + 1]
            if scalarFlags.contains(token) {
                guard index + 2 < tokens.count else {
                    throw CommandError.usage("\(token) at the end needs a value")
                }
                entries[key] = try scalar(flag: token, tokens[index + 2])
                index += 3
            } else {
                entries[key] = .string(token)
                index += 2
            }
        }
        return entries
    }

    static func scalar(flag: String, _ text: String) throws -> DefaultsValue {
        switch flag {
        case "-string": return .string(text)
        case "-int", "-integer":
            guard let int = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw CommandError.usage("'\(text)' is not an integer (64-bit, e.g. 42 or -7)")
            }
            return .int(int)
        case "-float", "-double", "-real":
            guard let double = Double(text.trimmingCharacters(in: .whitespaces)), double.isFinite
            else {
                throw CommandError.usage("'\(text)' is not a finite number (e.g. 1.5)")
            }
            return .double(double)
        case "-bool", "-boolean":
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default:
                throw CommandError.usage("'\(text)' is not a boolean (true/false, yes/no, 1/0)")
            }
        case "-date":
            guard let date = DefaultsValue.parseDate(text) else {
                throw CommandError.usage(
                    "'\(text)' is not an ISO 8601 date (e.g. 2026-11-23T07:00:00Z)"
                )
            }
            return .date(date)
        case "-data":
            guard let data = hexData(text) else {
                throw CommandError.usage(
                    "'\(text)' is not hex data (an even number of 0-9a-f digits)"
                )
            }
            return .data(data)
        default:
            do {
                return try DefaultsValue(jsonText: text)
            } catch {
                throw CommandError.usage(
                    error.limit == nil ? "-json value is not valid JSON: \(error)" : error.message
                )
            }
        }
    }

    static func hexData(_ text: String) -> Data? {
        var digits = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
        if digits.starts(with: Array("0x".utf8)) { digits.removeFirst(2) }
        guard digits.count.isMultiple(of: 2) else { return nil }
        var data = Data(capacity: digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexDigit(digits[index]), let low = hexDigit(digits[index + 1]) else {
                return nil
            }
            data.append(high << 4 | low)
            index += 2
        }
        return data
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Remove a key, or every key of the suite when KEY is omitted.",
        discussion: "Exits 3 when KEY has no value."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key to remove; all keys when omitted.") var key: String?

    func run() throws {
        let store = try global.openStore()
        guard let key else {
            try store.removeAll()
            return
        }
        guard try store.removeValue(forKey: key) != nil else {
            throw CommandError.notFound("key '\(key)' does not exist in suite '\(store.suiteName)'")
        }
    }
}

struct Rename: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename",
        abstract: "Move a value from OLD to NEW in one atomic change (replacing NEW).",
        discussion: "Exits 3 when OLD has no value."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key to rename.") var old: String
    @Argument(help: "Its new name.") var new: String

    func run() throws {
        let store = try global.openStore()
        guard try store.renameValue(forKey: old, to: new) else {
            throw CommandError.notFound("key '\(old)' does not exist in suite '\(store.suiteName)'")
        }
    }
}

struct Increment: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "increment",
        abstract:
            "Add BY (default 1, may be negative) to an integer atomically and print the result.",
        discussion: """
            A missing key starts from 0. A key holding a non-integer, or a sum past 64 bits, is \
            an error (exit 1). The new value is printed after it is stored; if it cannot be \
            printed, the error on stderr names the stored value (and `read KEY` gives it).
            """
    )

    /// The options given before `increment` (the root command parses those).
    @ParentCommand var root: SuiteDefaults
    /// The options given between `increment` and KEY.
    @OptionGroup var options: VerbOptions
    @Argument(help: "The key.") var key: String
    @Argument(parsing: .captureForPassthrough, help: "The amount (default 1).") var by: [String] =
        []

    func run() throws {
        guard by.count <= 1 else {
            throw CommandError.usage("increment takes KEY and at most one amount")
        }
        var amount = 1
        if let text = by.first {
            guard let parsed = Int(text) else {
                throw CommandError.usage("'\(text)' is not an integer amount (64-bit)")
            }
            amount = parsed
        }
        let store = try options.overriding(root.global).openStore()
        let value = try store.increment(key, by: amount)
        do {
            try emit(String(value))
        } catch {
            // Stored but not seen: say what the caller missed, so it is never misread.
            Console.error(
                "\(error); '\(key)' in suite '\(store.suiteName)' is now \(value) (the increment was stored)"
            )
            throw ExitCode(
                error.isClosedPipe ? ExitStatus.brokenPipe.rawValue : ExitStatus.failure.rawValue
            )
        }
    }
}

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract:
            "Replace the suite with a dictionary from FILE (or stdin with -): property list or JSON.",
        discussion: """
            The format is detected: JSON when the text starts with { or [, else an XML or \
            binary property list. The top level must be a dictionary holding at least one \
            setting (to clear a suite, use `delete`). The input is parsed whole and checked \
            against the limits before the suite is replaced, in one atomic change; --merge \
            keeps keys the file does not name.
            """
    )

    /// The most an import reads: a suite's limit, with room for JSON's escapes and base64.
    static let maximumInputBytes = 4 * DefaultsLimits.maximumStoreBytes

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file to read, or - for stdin.") var file: String
    @Flag(help: "Keep the suite's keys that the file does not name.") var merge = false

    func run() throws {
        let name = file == "-" ? "stdin" : file
        let bytes: [UInt8]
        do {
            bytes =
                file == "-"
                ? try FileIO.readAll(0, limit: Self.maximumInputBytes, name: name)
                : try FileIO.readFile(atPath: file, limit: Self.maximumInputBytes)
        } catch {
            throw error.code == .tooLarge
                ? CommandError.usage("\(error)") : CommandError.failure("cannot read \(error)")
        }
        let data = Data(bytes)
        let firstByte = data.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        guard firstByte != nil else {
            throw CommandError.failure("\(name) holds no settings; nothing was imported")
        }
        let value: DefaultsValue
        do {
            // The top level is the suite itself: its values may nest the full limit below it.
            let depth = DefaultsLimits.maximumNestingDepth + 1
            if firstByte == UInt8(ascii: "{") || firstByte == UInt8(ascii: "[") {
                value = try DefaultsValue(jsonData: data, maximumNestingDepth: depth)
            } else {
                value = try DefaultsValue(propertyList: data, maximumNestingDepth: depth)
            }
        } catch {
            throw error.limit == nil
                ? CommandError.failure("\(name): \(error)")
                : CommandError.usage("\(name): \(error.message)")
        }
        guard case .dictionary(let entries) = value else {
            throw CommandError.failure(
                "\(name): the top level is \(value.typeName == "array" || value.typeName == "integer" ? "an" : "a") \(value.typeName); a suite imports a dictionary"
            )
        }
        guard !entries.isEmpty else {
            throw CommandError.failure(
                "\(name) holds an empty dictionary, no settings; nothing was imported (to clear the suite, use delete)"
            )
        }
        let store = try global.openStore()
        try store.update { values in
            if merge {
                values.merge(entries) { _, new in new }
            } else {
                values = entries
            }
        }
        if global.common.verbose {
            Console.note("imported \(entries.count) keys into suite '\(store.suiteName)'")
        }
    }
}
