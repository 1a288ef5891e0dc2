import ArgumentParser
import CommandSupport
import Foundation
import Logging
import SharedDefaults

/// `suite-defaults`: read and change a suite's shared settings from the command line, with
/// verbs after macOS `defaults`.
@main
struct SuiteDefaults: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suite-defaults",
        abstract: "Read and change the settings every Shopfloor tool of a suite shares.",
        discussion: """
            The suite is --suite NAME, else SHOPFLOOR_SUITE, else "shopfloor"; its container \
            lives under SHOPFLOOR_HOME (else $XDG_DATA_HOME/shopfloor, else \
            ~/.local/share/shopfloor). Every change is atomic and durable, and safe while other \
            tools use the suite. Only the defaults store is ever read or printed: tokens and \
            other files in the container are not.

            Exit codes: 0 success, 1 error, 3 key not found, 64 usage, 130/143 watch stopped by \
            SIGINT/SIGTERM.

            Examples:
              suite-defaults write serverURL -string https://store.example
              suite-defaults write retries -int 3
              suite-defaults write features -array scan -bool true
              suite-defaults read serverURL
              suite-defaults increment launches
              suite-defaults export - --json
              suite-defaults --suite store-12 watch serverURL
            """,
        version: SuiteVersion.current,
        subcommands: [
            Read.self, ReadType.self, Write.self, Delete.self, Rename.self, Increment.self,
            Import.self, Export.self, Domains.self, Find.self, Watch.self,
        ]
    )

    @OptionGroup var global: GlobalOptions

    static func main() async {
        await main(rewritingWrite(Array(CommandLine.arguments.dropFirst())))
    }

    /// `write`'s values use single-dash type flags (`-int`, `-array`) that an option parser
    /// would take for options. The shared options given between `write` and KEY move before
    /// the verb, and a `--` goes before KEY so everything from KEY on reaches `write` as is.
    static func rewritingWrite(_ arguments: [String]) -> [String] {
        let valued: Set<String> = ["--suite"]
        let flags: Set<String> = ["--json", "--quiet", "-q", "--verbose", "-v"]
        var index = 0
        // Skip the shared options before the verb.
        while index < arguments.count {
            let token = arguments[index]
            if valued.contains(token) {
                index += 2
            } else if flags.contains(token) || token.hasPrefix("--suite=") {
                index += 1
            } else {
                break
            }
        }
        guard index < arguments.count, arguments[index] == "write" else { return arguments }
        var before = Array(arguments[..<index])
        var rest = index + 1
        while rest < arguments.count {
            let token = arguments[rest]
            if token == "--help" || token == "-h" { return arguments }
            if valued.contains(token), rest + 1 < arguments.count {
                before += [token, arguments[rest + 1]]
                rest += 2
            } else if flags.contains(token) || token.hasPrefix("--suite=") {
                before.append(token)
                rest += 1
            } else {
                break
            }
        }
        if rest < arguments.count, arguments[rest] == "--" { rest += 1 }
        return before + ["write", "--"] + arguments[rest...]
    }
}

/// Options every verb takes: the suite and the shared `--json`/`--quiet`/`--verbose`.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The suite (app group) name; else SHOPFLOOR_SUITE, else shopfloor.")
    var suite: String?

    @OptionGroup var common: CommonOptions

    /// The suite named by --suite or the environment.
    var suiteName: String { suite ?? SuiteContainer.defaultSuiteName() }

    func openStore(refresh: SharedStore.RefreshPolicy = .statEveryRead) throws -> SharedStore {
        try SharedStore(
            suite: suiteName,
            refresh: refresh,
            logger: common.makeLogger(label: "suite-defaults")
        )
    }
}

/// A failure with the exit status it maps to.
struct CommandFailure: Error {
    var status: ExitStatus
    var message: String

    static func usage(_ message: String) -> CommandFailure {
        CommandFailure(status: .usage, message: message)
    }
    static func notFound(_ message: String) -> CommandFailure {
        CommandFailure(status: .notFound, message: message)
    }
    static func failure(_ message: String) -> CommandFailure {
        CommandFailure(status: .failure, message: message)
    }
}

/// Runs a verb, printing `error: ...` on stderr and exiting with the suite's code on failure.
func reporting(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let failure as CommandFailure {
        Console.error(failure.message)
        throw failure.status.exitCode
    } catch let error as SharedStoreError {
        Console.error(error.description)
        throw (error.code == .invalidSuiteName ? ExitStatus.usage : .failure).exitCode
    } catch let exit as ExitCode {
        throw exit
    } catch let clean as CleanExit {
        throw clean
    } catch {
        Console.error("\(error)")
        throw ExitStatus.failure.exitCode
    }
}

/// Writes a line to stdout unbuffered, so each line reaches a pipe at once and nothing is
/// left in a buffer when `watch` exits on a signal.
func emit(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

extension DefaultsValue {
    /// The value as `read KEY` prints it: scalars plainly (booleans 1/0, dates RFC 3339, data
    /// as hex), arrays and dictionaries as JSON.
    var plainText: String {
        switch self {
        case .string(let string): string
        case .int(let int): String(int)
        case .double: jsonText()
        case .bool(let bool): bool ? "1" : "0"
        case .date(let date): DefaultsValue.rfc3339(date)
        case .data(let data): data.map { String(format: "%02x", $0) }.joined()
        case .array, .dictionary: jsonText(pretty: true)
        }
    }
}
