import ArgumentParser
import CommandSupport
import Dispatch
import Foundation
import Logging
import Models
import StoreServer
import Synchronization

/// `store-server`: the suite's backend and its administration.
@main
struct StoreServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store-server",
        abstract:
            "The Shopfloor store server: reservations, customers, products and client configuration.",
        discussion: """
            Data lives in SQLite ($SHOPFLOOR_HOME/server/store.sqlite) unless --database names a
            file or a postgres://user@host/db URL. Every command runs pending migrations first.

            Examples:
              store-server serve --demo-data
              store-server serve --port 0 --database postgres://shopfloor@127.0.0.1/shopfloor
              printf '%s' "$PASSWORD" | store-server user add ana --display-name "Ana Weber"
              store-server config set-flag checkInEnabled false --store 5D0F1C2A-0006-4A00-8000-000000000006
            """,
        version: SuiteVersion.current,
        subcommands: [Serve.self, Migrate.self, Seed.self, UserCommand.self, ConfigCommand.self],
        defaultSubcommand: Serve.self
    )
}

/// Options every command shares.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "A SQLite file path or a postgres://user[:password]@host[:port]/database URL (default: $SHOPFLOOR_DATABASE_URL, else $SHOPFLOOR_HOME/server/store.sqlite).",
            valueName: "path|url"
        )
    )
    var database: String?

    @Option(name: .long, help: "PBKDF2 iterations for password hashes (the sign-in cost; ≥ 1000).")
    var passwordCost: Int = 600_000

    @OptionGroup var common: CommonOptions

    /// `--database`, else `SHOPFLOOR_DATABASE_URL`, else the SQLite file in the suite's home.
    var location: DatabaseLocation {
        if let database { return DatabaseLocation(argument: database) }
        if let url = ProcessInfo.processInfo.environment["SHOPFLOOR_DATABASE_URL"], !url.isEmpty {
            return DatabaseLocation(argument: url)
        }
        return .defaultSQLite()
    }

    func validate() throws {
        guard passwordCost >= 1_000, passwordCost <= 10_000_000 else {
            throw ValidationError(
                "--password-cost must be from 1000 to 10000000, got \(passwordCost)"
            )
        }
        if let database, database.isEmpty { throw ValidationError("--database must not be empty") }
    }

    func logger(_ label: String, defaultLevel: Logger.Level = .warning) -> Logger {
        var logger = common.makeLogger(label: label)
        if !common.verbose && !common.quiet { logger.logLevel = defaultLevel }
        return logger
    }
}

/// Runs `body`, mapping errors to the suite's exit codes with an `error:` line.
func runAdmin(_ options: DatabaseOptions, _ body: (StoreAdmin) async throws -> Void) async throws {
    let logger = options.logger("store-server")
    let admin: StoreAdmin
    do {
        admin = try await StoreAdmin.open(
            options.location,
            passwordIterations: options.passwordCost,
            logger: logger
        )
    } catch {
        Console.error("\(error)")
        throw ExitStatus.failure.exitCode
    }
    do {
        try await body(admin)
        await admin.close()
    } catch let error as UserError {
        await admin.close()
        Console.error(error.message)
        throw (error.code == .notFound ? ExitStatus.notFound : ExitStatus.failure).exitCode
    } catch let error as ExitCode {
        await admin.close()
        throw error
    } catch {
        await admin.close()
        Console.error("\(error)")
        throw ExitStatus.failure.exitCode
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the API (first stdout line: listening on http://HOST:PORT).",
        discussion:
            "SIGINT or SIGTERM stops accepting connections, answers the requests in flight, then exits 130 or 143."
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0: any free port).") var port = 8080
    @Flag(help: "Load the demo data first when the database has no stores.") var demoData = false
    @Option(help: "Access token lifetime in seconds.") var accessTokenTtl = 900
    @Option(help: "Refresh token lifetime in seconds.") var refreshTokenTtl = 30 * 86_400
    @Option(help: "PostgreSQL connections per event loop.") var databaseConnections = 4
    @OptionGroup var options: DatabaseOptions

    func validate() throws {
        guard (0...65_535).contains(port) else {
            throw ValidationError("--port must be 0…65535, got \(port)")
        }
        guard accessTokenTtl >= 1 else {
            throw ValidationError("--access-token-ttl must be at least 1 second")
        }
        guard refreshTokenTtl >= accessTokenTtl else {
            throw ValidationError("--refresh-token-ttl must be at least --access-token-ttl")
        }
        guard (1...64).contains(databaseConnections) else {
            throw ValidationError("--database-connections must be 1…64")
        }
    }

    func run() async throws {
        let logger = options.logger("store-server", defaultLevel: .info)
        let signals = SignalRecorder()
        var configuration = StoreServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.database = options.location
        configuration.demoData = demoData
        configuration.passwordIterations = options.passwordCost
        configuration.accessTokenTTL = TimeInterval(accessTokenTtl)
        configuration.refreshTokenTTL = TimeInterval(refreshTokenTtl)
        configuration.databaseConnections = databaseConnections
        let displayHost = host.contains(":") ? "[\(host)]" : host
        configuration.onListening = { _, port in
            FileHandle.standardOutput.write(
                Data("listening on http://\(displayHost):\(port)\n".utf8)
            )
        }
        do {
            let application = try await buildApplication(
                configuration: configuration,
                logger: logger
            )
            try await application.runService()
        } catch {
            Console.error("\(error)")
            throw ExitStatus.failure.exitCode
        }
        switch signals.received {
        case SIGINT: throw ExitStatus.interrupted.exitCode
        case SIGTERM: throw ExitStatus.terminated.exitCode
        default: break
        }
    }
}

/// Notes which of SIGINT/SIGTERM arrived (ServiceLifecycle does the shutdown itself).
final class SignalRecorder {
    private final class Last: Sendable {
        let value = Mutex<Int32>(0)
    }
    private let last = Last()
    private var sources: [any DispatchSourceSignal] = []

    init() {
        let last = self.last
        for signalNumber in [SIGINT, SIGTERM] {
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { last.value.withLock { $0 = signalNumber } }
            source.resume()
            sources.append(source)
        }
    }

    var received: Int32 { last.value.withLock { $0 } }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending schema migrations and exit."
    )
    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        try await runAdmin(options) { _ in
            if !options.common.quiet { Console.note("database \(options.location) is up to date") }
        }
    }
}

struct Seed: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract: "Load the deterministic demo data (into a database without stores)."
    )
    @Flag(help: "The demo data set (required).") var demo = false
    @OptionGroup var options: DatabaseOptions

    func validate() throws {
        guard demo else { throw ValidationError("say which data to load: --demo") }
    }

    func run() async throws {
        try await runAdmin(options) { admin in
            let summary = try await admin.seedDemo()
            if summary.loaded {
                print(
                    "loaded \(summary.stores) stores, \(summary.customers) customers, \(summary.reservations) reservations, \(summary.products) products, user \(DemoData.username)"
                )
            } else {
                Console.warning("the database already has stores; demo data not loaded")
            }
        }
    }
}

/// Reads a password from stdin: everything up to the end, one trailing newline dropped.
func readPassword() throws -> String {
    let data = FileHandle.standardInput.readDataToEndOfFile()
    guard var text = String(data: data, encoding: .utf8) else {
        Console.error("the password on stdin is not UTF-8")
        throw ExitStatus.usage.exitCode
    }
    if text.hasSuffix("\r\n") {
        text.removeLast(2)
    } else if text.hasSuffix("\n") {
        text.removeLast()
    }
    guard !text.isEmpty else {
        Console.error(
            "no password on stdin (pipe it in: printf '%s' \"$PASSWORD\" | store-server user add NAME)"
        )
        throw ExitStatus.usage.exitCode
    }
    return text
}

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage associates (passwords are read from stdin).",
        subcommands: [Add.self, List.self, Passwd.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add an associate; the password comes from stdin."
        )
        @Argument(help: "The user name (letters, digits, '.', '_', '-').") var name: String
        @Option(help: "The name shown to people (default: the user name).") var displayName: String?
        @Option(help: "The associate's home store id.") var homeStore: String?
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            var store: UUID?
            if let homeStore {
                guard let id = UUID(uuidString: homeStore) else {
                    Console.error("--home-store '\(homeStore)' is not a store UUID")
                    throw ExitStatus.usage.exitCode
                }
                store = id
            }
            let password = try readPassword()
            try await runAdmin(options) { admin in
                let associate = try await admin.addUser(
                    name,
                    password: password,
                    displayName: displayName,
                    homeStoreID: store
                )
                if !options.common.quiet { Console.note("added user \(associate.username)") }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List associates (JSON with --json)."
        )
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await runAdmin(options) { admin in
                let users = try await admin.listUsers()
                if options.common.json {
                    let page = Page(items: users.map(\.associate), nextCursor: nil)
                    print(String(decoding: try JSONEncoder.shopfloor.encode(page), as: UTF8.self))
                } else {
                    for user in users {
                        print(
                            "\(user.associate.username)\t\(user.associate.displayName)\t\(user.associate.homeStoreID?.uuidString ?? "-")"
                        )
                    }
                }
            }
        }
    }

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "passwd",
            abstract: "Set an associate's password from stdin (signs them out everywhere)."
        )
        @Argument(help: "The user name.") var name: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let password = try readPassword()
            try await runAdmin(options) { admin in
                try await admin.setPassword(name, password: password)
                if !options.common.quiet { Console.note("password of \(name) changed") }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove an associate and end their sessions."
        )
        @Argument(help: "The user name.") var name: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await runAdmin(options) { admin in
                try await admin.removeUser(name)
                if !options.common.quiet { Console.note("removed user \(name)") }
            }
        }
    }
}

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
                print(String(decoding: try await admin.configurationJSON(), as: UTF8.self))
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
            guard [market, region, store].compactMap({ $0 }).count <= 1 else {
                throw ValidationError("give at most one of --market, --region, --store")
            }
            if let store, UUID(uuidString: store) == nil {
                throw ValidationError("--store '\(store)' is not a store UUID")
            }
        }

        func run() async throws {
            let flagValue: FlagValue
            if let decoded = try? JSONDecoder().decode(FlagValue.self, from: Data(value.utf8)) {
                flagValue = decoded
            } else {
                flagValue = .string(value)
            }
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

        func run() async throws {
            guard let semantic = try? SemanticVersion(parsing: version) else {
                Console.error("'\(version)' is not a semantic version such as 1.4.0")
                throw ExitStatus.usage.exitCode
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
                Console.error("cannot read '\(file)': \((error as NSError).localizedDescription)")
                throw ExitStatus.failure.exitCode
            }
            guard data.count <= 1 << 20 else {
                Console.error("'\(file)' is larger than 1 MiB")
                throw ExitStatus.failure.exitCode
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
