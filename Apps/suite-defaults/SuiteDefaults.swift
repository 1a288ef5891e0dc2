import ArgumentParser
public import CommandSupport
import Foundation
import Logging
import Models
import Plumbing
public import SharedDefaults

/// `suite-defaults`: read and change a suite's shared settings from the command line, with
/// verbs after macOS `defaults`.
@main
struct SuiteDefaults: SuiteCommand {
    static let configuration = CommandConfiguration(
        commandName: "suite-defaults",
        abstract: "Read and change the settings every Shopfloor tool of a suite shares.",
        discussion: """
            The suite is --suite NAME, else SHOPFLOOR_SUITE, else "shopfloor"; its container \
            lives under SHOPFLOOR_HOME (else $XDG_DATA_HOME/shopfloor, else \
            ~/.local/share/shopfloor). Every change is atomic and durable, and safe while other \
            tools use the suite. Only the defaults store is ever read or printed: tokens and \
            other files in the container are not.

            Limits: a value nests at most 100 levels of arrays and dictionaries, a suite takes \
            at most 64 MiB; a change past them is refused (64) before anything is written. A \
            change waits for another tool's change at most --lock-timeout seconds, and says \
            so on stderr after a second.

            Exit codes: 0 success, 1 error, 3 key not found, 64 usage or a value past the \
            limits, 130/143 stopped by SIGINT/SIGTERM, 141 stdout closed.

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
}

/// Options every verb takes: the suite, the lock timeout and the shared `--json`/`--quiet`/
/// `--verbose`.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The suite (app group) name; else SHOPFLOOR_SUITE, else shopfloor.")
    var suite: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Give up a change after waiting this long for another tool's change (0-86400).",
            valueName: "seconds"
        )
    )
    var lockTimeout: Double = 30

    @OptionGroup var common: CommonOptions

    mutating func validate() throws {
        guard lockTimeout.isFinite, (0...86_400).contains(lockTimeout) else {
            throw ValidationError("--lock-timeout must be between 0 and 86400 seconds")
        }
    }

    /// The suite named by --suite or the environment.
    var suiteName: String { suite ?? SuiteContainer.defaultSuiteName() }

    func openStore(refresh: SharedStore.RefreshPolicy = .statEveryRead) throws -> SharedStore {
        try SharedStore(
            suite: suiteName,
            refresh: refresh,
            logger: common.makeLogger(label: "suite-defaults"),
            lockTimeout: .milliseconds(Int64((lockTimeout * 1000).rounded()))
        )
    }
}

/// Writes a line to stdout at once (each line reaches a pipe as it is printed), checked.
func emit(_ text: String) throws(OutputError) {
    try StandardOutput.line(text)
}

extension DefaultsValue {
    /// The value as `read KEY` prints it: scalars plainly (booleans 1/0, dates in the suite's
    /// RFC 3339 form, data as hex), arrays and dictionaries as JSON.
    func plainText() throws -> String {
        switch self {
        case .string(let string): string
        case .int(let int): String(int)
        case .double(let double): "\(double)"
        case .bool(let bool): bool ? "1" : "0"
        case .date(let date): RFC3339.string(from: date)
        case .data(let data): data.map { String(format: "%02x", $0) }.joined()
        case .array, .dictionary: try JSONOutput.text(self, pretty: true)
        }
    }
}

/// The store's failures as the entry point reports them: an invalid suite name or a value
/// past the limits is a usage error (64), the rest 1.
extension SharedStoreError: ReportableError {
    /// 64 for an invalid suite name or a value past the limits, 1 for anything else.
    public var exitStatus: ExitStatus {
        switch code {
        case .invalidSuiteName, .limitExceeded: .usage
        default: .failure
        }
    }
}
