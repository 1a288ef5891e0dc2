import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Models
import StoreServer

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show and change the client configuration (every change bumps configVersion).",
        discussion: """
            Flags the server enforces: checkInEnabled, newReservationsEnabled, cancellationEnabled
            (bool), maxPartySize, reservationSlotMinutes (number), storeNotice (string).
            Precedence for a store: --store > --region > --market > the global value.
            """,
        subcommands: [Show.self, SetFlag.self, SetMinimumVersion.self, Import.self]
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print the configuration as JSON (config import reads it back)."
        )
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await runAdmin(options) { admin in
                try StandardOutput.line(
                    String(decoding: try await admin.configurationJSON(), as: UTF8.self)
                )
            }
        }
    }

    struct SetFlag: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-flag",
            abstract: "Set a flag globally or for a market, region or store.",
            discussion: "VALUE is JSON (true, 6, \"text\"); anything else is taken as a string."
        )
        @Argument(help: "The flag name.") var name: String
        @Argument(help: "The value: true/false, a number, or a string.") var value: String
        @Option(help: "Only for this market (e.g. DE).") var market: String?
        @Option(help: "Only for this region (e.g. DE-BE).") var region: String?
        @Option(help: "Only for this store id.") var store: String?
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            guard let known = KnownFlag.defaults[name] else {
                throw ValidationError(
                    "unknown flag '\(name.prefix(64))'\(KnownFlag.suggestion(for: name)); the flags are \(KnownFlag.names.joined(separator: ", "))"
                )
            }
            if Self.parse(value, like: known).typeName != known.typeName {
                throw ValidationError(
                    "\(name) takes a \(known.typeName), not '\(value.prefix(64))'"
                )
            }
            guard [market, region, store].compactMap({ $0 }).count <= 1 else {
                throw ValidationError("give at most one of --market, --region, --store")
            }
            if let store, UUID(uuidString: store) == nil {
                throw ValidationError("--store '\(store)' is not a store UUID")
            }
        }

        /// VALUE as JSON (true, 6, "text"), else as a string; for a string flag, always the
        /// text as given.
        static func parse(_ value: String, like known: FlagValue?) -> FlagValue {
            if case .string = known { return .string(value) }
            return (try? JSONDecoder().decode(FlagValue.self, from: Data(value.utf8)))
                ?? .string(value)
        }

        func run() async throws {
            let flagValue = Self.parse(value, like: KnownFlag.defaults[name])
            let scope: ConfigService.Scope
            if let market {
                scope = .market(market)
            } else if let region {
                scope = .region(region)
            } else if let store {
                scope = .store(UUID(uuidString: store)!)
            } else {
                scope = .global
            }
            try await runAdmin(options) { admin in
                let snapshot = try await admin.config.setFlag(name, value: flagValue, scope: scope)
                if !options.common.quiet {
                    Console.note("\(name) set; configVersion \(snapshot.version)")
                }
            }
        }
    }

    struct SetMinimumVersion: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-minimum-version",
            abstract: "Set the minimum client version of an app ('*': every app without its own)."
        )
        @Argument(help: "The app name (scan, reservations, catalog, …) or '*'.") var app: String
        @Argument(help: "A semantic version, e.g. 1.4.0.") var version: String

        @OptionGroup var options: DatabaseOptions

        /// The suite's client apps, whose versions the server can require.
        static let apps = ["catalog", "reservations", "scan", "suite-defaults"]

        func validate() throws {
            guard app == "*" || Self.apps.contains(app) else {
                throw ValidationError(
                    "unknown app '\(app.prefix(64))'; the apps are \(Self.apps.joined(separator: ", ")) or '*'"
                )
            }
        }

        func run() async throws {
            guard let semantic = try? SemanticVersion(parsing: version) else {
                throw CommandError.usage("'\(version)' is not a semantic version such as 1.4.0")
            }
            try await runAdmin(options) { admin in
                let snapshot = try await admin.config.setMinimumVersion(app: app, version: semantic)
                if !options.common.quiet {
                    Console.note(
                        "minimum version of \(app) is \(semantic); configVersion \(snapshot.version)"
                    )
                }
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Replace flags, form and minimum versions from a JSON file ('-' for stdin)."
        )
        @Argument(help: "A ClientConfiguration JSON file, as config show prints it.") var file:
            String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let data: Data
            do {
                if file == "-" {
                    data = FileHandle.standardInput.readDataToEndOfFile()
                } else {
                    data = try Data(contentsOf: URL(fileURLWithPath: file))
                }
            } catch {
                throw CommandError.failure(
                    "cannot read '\(file)': \((error as NSError).localizedDescription)"
                )
            }
            guard data.count <= 1 << 20 else {
                throw CommandError.failure("'\(file)' is larger than 1 MiB")
            }
            try await runAdmin(options) { admin in
                do {
                    let snapshot = try await admin.config.importConfiguration(data)
                    if !options.common.quiet {
                        Console.note("imported \(file); configVersion \(snapshot.version)")
                    }
                } catch let error as ConfigError {
                    throw ConfigError("\(file): \(error.message)")
                }
            }
        }
    }
}
