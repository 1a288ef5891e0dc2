import ArgumentParser
import CommandSupport
import Foundation
import SharedDefaults

struct Write: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Set a key: write KEY [-string|-int|-float|-bool|-date|-data|-array|-dict|-json] VALUE...",
        discussion: """
            Without a type flag the value is a string. -int and -float take a number, -bool \
            true/false/yes/no/1/0, -date ISO 8601 (2026-11-23T07:00:00Z), -data hex, -json any \
            JSON value. -array takes elements and -dict key/value pairs; each element or value \
            is a string unless a type flag precedes it (-array -int 1 -string two). \
            -array-add appends to an array and -dict-add adds to a dictionary. Put --suite \
            before KEY.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(
        parsing: .captureForPassthrough,
        help: "KEY, an optional type flag, then the value(s)."
    )
    var arguments: [String] = []

    func run() throws {
        try reporting {
            if arguments.first == "--help" || arguments.first == "-h" {
                throw CleanExit.helpRequest(self)
            }
            var arguments = arguments[...]
            // `main` puts a `--` before KEY (see `SuiteDefaults.rewritingWrite`).
            if arguments.first == "--" { arguments.removeFirst() }
            guard let key = arguments.first else {
                throw CommandFailure.usage("write needs a KEY and a value")
            }
            let change = try WriteValue.parse(Array(arguments.dropFirst()))
            let store = try global.openStore()
            try store.update { values in
                switch change {
                case .set(let value): values[key] = value
                case .arrayAdd(let elements):
                    switch values[key] {
                    case nil: values[key] = .array(elements)
                    case .array(let existing): values[key] = .array(existing + elements)
                    case .some(let other):
                        throw CommandFailure.failure(
                            "cannot add to '\(key)': it holds a \(other.typeName), not an array"
                        )
                    }
                case .dictionaryAdd(let entries):
                    switch values[key] {
                    case nil: values[key] = .dictionary(entries)
                    case .dictionary(let existing):
                        values[key] = .dictionary(existing.merging(entries) { _, new in new })
                    case .some(let other):
                        throw CommandFailure.failure(
                            "cannot add to '\(key)': it holds a \(other.typeName), not a dictionary"
                        )
                    }
                }
            }
        }
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
            throw CommandFailure.usage("write needs a value after KEY")
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
                    throw CommandFailure.usage(
                        "\(first) takes exactly one value, got \(tokens.count - 1)"
                    )
                }
                return .set(try scalar(flag: first, tokens[1]))
            }
            if first.hasPrefix("-") && first.count > 1 && Double(first) == nil {
                throw CommandFailure.usage(
                    "unknown type flag '\(first)'; use -string, -int, -float, -bool, -date, -data, -array, -dict or -json (write KEY -string \(first) for a string)"
                )
            }
            guard tokens.count == 1 else {
                throw CommandFailure.usage(
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
                    throw CommandFailure.usage("\(token) at the end needs a value")
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
                throw CommandFailure.usage("-dict key '\(key)' has no value")
            }
            let token = tokens[index + 1]
            if scalarFlags.contains(token) {
                guard index + 2 < tokens.count else {
                    throw CommandFailure.usage("\(token) at the end needs a value")
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
                throw CommandFailure.usage("'\(text)' is not an integer (64-bit, e.g. 42 or -7)")
            }
            return .int(int)
        case "-float", "-double", "-real":
            guard let double = Double(text.trimmingCharacters(in: .whitespaces)), double.isFinite
            else {
                throw CommandFailure.usage("'\(text)' is not a finite number (e.g. 1.5)")
            }
            return .double(double)
        case "-bool", "-boolean":
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default:
                throw CommandFailure.usage("'\(text)' is not a boolean (true/false, yes/no, 1/0)")
            }
        case "-date":
            guard let date = DefaultsValue.parseDate(text) else {
                throw CommandFailure.usage(
                    "'\(text)' is not an ISO 8601 date (e.g. 2026-11-23T07:00:00Z)"
                )
            }
            return .date(date)
        case "-data":
            guard let data = hexData(text) else {
                throw CommandFailure.usage(
                    "'\(text)' is not hex data (an even number of 0-9a-f digits)"
                )
            }
            return .data(data)
        default:
            do {
                return try DefaultsValue(jsonText: text)
            } catch {
                throw CommandFailure.usage("-json value is not valid JSON: \(error)")
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
        abstract: "Remove a key, or every key of the suite when KEY is omitted.",
        discussion: "Exits 3 when KEY has no value."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key to remove; all keys when omitted.") var key: String?

    func run() throws {
        try reporting {
            let store = try global.openStore()
            guard let key else {
                try store.removeAll()
                return
            }
            guard try store.removeValue(forKey: key) != nil else {
                throw CommandFailure.notFound(
                    "key '\(key)' does not exist in suite '\(store.suiteName)'"
                )
            }
        }
    }
}

struct Rename: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move a value from OLD to NEW in one atomic change (replacing NEW).",
        discussion: "Exits 3 when OLD has no value."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key to rename.") var old: String
    @Argument(help: "Its new name.") var new: String

    func run() throws {
        try reporting {
            let store = try global.openStore()
            guard try store.renameValue(forKey: old, to: new) else {
                throw CommandFailure.notFound(
                    "key '\(old)' does not exist in suite '\(store.suiteName)'"
                )
            }
        }
    }
}

struct Increment: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Add BY (default 1, may be negative) to an integer atomically and print the result.",
        discussion: "A missing key starts from 0. A key holding a non-integer is an error (exit 1)."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key.") var key: String
    @Argument(parsing: .captureForPassthrough, help: "The amount (default 1).") var by: [String] =
        []

    func run() throws {
        try reporting {
            guard by.count <= 1 else {
                throw CommandFailure.usage("increment takes KEY and at most one amount")
            }
            var amount = 1
            if let text = by.first {
                guard let parsed = Int(text) else {
                    throw CommandFailure.usage("'\(text)' is not an integer amount")
                }
                amount = parsed
            }
            let store = try global.openStore()
            emit(String(try store.increment(key, by: amount)))
        }
    }
}

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Replace the suite with a dictionary from FILE (or stdin with -): property list or JSON.",
        discussion: """
            The format is detected: JSON when the text starts with {, else a property list \
            (XML or binary). The top level must be a dictionary. The suite is replaced in one \
            atomic change; --merge keeps keys the file does not name.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file to read, or - for stdin.") var file: String
    @Flag(help: "Keep the suite's keys that the file does not name.") var merge = false

    func run() throws {
        try reporting {
            let data: Data
            if file == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                do {
                    data = try Data(contentsOf: URL(fileURLWithPath: file))
                } catch {
                    throw CommandFailure.failure(
                        "cannot read \(file): \(error.localizedDescription)"
                    )
                }
            }
            let name = file == "-" ? "stdin" : file
            let value: DefaultsValue
            do {
                let firstByte = data.first {
                    ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0)
                }
                if firstByte == UInt8(ascii: "{") || firstByte == UInt8(ascii: "[") {
                    value = try DefaultsValue(jsonData: data)
                } else {
                    value = try DefaultsValue(propertyList: data)
                }
            } catch {
                throw CommandFailure.failure("\(name): \(error)")
            }
            guard case .dictionary(let entries) = value else {
                throw CommandFailure.failure(
                    "\(name): the top level is \(value.typeName == "array" || value.typeName == "integer" ? "an" : "a") \(value.typeName); a suite imports a dictionary"
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
}
