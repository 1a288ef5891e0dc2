import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Models
import StoreServer

/// `store-server`: the suite's backend and its administration.
@main
struct StoreServerCommand: SuiteCommand {
    static let configuration = CommandConfiguration(
        commandName: "store-server",
        abstract:
            "The Shopfloor store server: reservations, customers, products and client configuration.",
        discussion: """
            Data lives in SQLite ($SHOPFLOOR_HOME/server/store.sqlite) unless
            --database names a file or a postgres://user@host/db URL. Every command
            runs pending migrations first.

            Examples:
              store-server serve --demo-data
              store-server serve --database postgres://shopfloor@db.example/shopfloor
              printf '%s' "$PASSWORD" | store-server user add ana \\
                --store berlin-kurfuerstendamm
              store-server config set-flag checkInEnabled false \\
                --store 5D0F1C2A-0006-4A00-8000-000000000006
              store-server store hours berlin-kurfuerstendamm sunday closed
            """,
        version: SuiteVersion.current,
        subcommands: [
            Serve.self, Migrate.self, Backup.self, Seed.self, UserCommand.self, StoreCommand.self,
            ConfigCommand.self,
        ],
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
        if let database, database.isEmpty { throw ValidationError("--database must not be empty") }
        // The one that is used: --database, else the environment.
        let (name, value) =
            database.map { ("--database", $0) }
            ?? (
                "SHOPFLOOR_DATABASE_URL",
                ProcessInfo.processInfo.environment["SHOPFLOOR_DATABASE_URL"] ?? ""
            )
        if let scheme = DatabaseLocation.unsupportedScheme(value) {
            throw ValidationError(
                "\(name): '\(scheme)://' is not a database this server uses (a SQLite file path or a postgres:// URL)"
            )
        }
    }

    func logger(_ label: String, defaultLevel: Logger.Level = .warning) -> Logger {
        var logger = common.makeLogger(label: label)
        if !common.verbose && !common.quiet { logger.logLevel = defaultLevel }
        return logger
    }
}

/// The cost of new password hashes: only on the commands that hash a password (`serve`,
/// `seed`, `user add`, `user passwd`), so no other command accepts an option it ignores.
struct PasswordCostOptions: ParsableArguments {
    /// The cost when `--password-cost` is not given (OWASP's 2023 figure for PBKDF2-SHA256).
    static let defaultCost = 600_000

    @Option(
        name: .long,
        help: "PBKDF2 iterations for password hashes (the sign-in cost; at least 100000)."
    )
    var passwordCost: Int = Self.defaultCost

    @Flag(
        name: .customLong("insecure-password-cost-for-tests"),
        help: "Allow a --password-cost below 100000 (tests and benchmarks only)."
    )
    var insecurePasswordCostForTests = false

    func validate() throws {
        let floor =
            insecurePasswordCostForTests
            ? 1_000 : StoreServerConfiguration.minimumPasswordIterations
        guard passwordCost >= floor, passwordCost <= 10_000_000 else {
            throw ValidationError(
                "--password-cost must be from \(floor) to 10000000, got \(passwordCost)"
                    + (insecurePasswordCostForTests
                        ? "" : " (below \(floor) only with --insecure-password-cost-for-tests)")
            )
        }
    }
}

/// Runs `body` on the migrated database and closes it; failures become the suite's exit codes
/// with an `error:` line (an unknown user 3, a bad user name or password 64, anything else 1). `cost` is given by the commands
/// that hash a password; the others never hash one.
func runAdmin(
    _ options: DatabaseOptions,
    cost: PasswordCostOptions? = nil,
    _ body: (StoreAdmin) async throws -> Void
) async throws {
    let logger = options.logger("store-server")
    let admin: StoreAdmin
    do {
        admin = try await StoreAdmin.open(
            options.location,
            passwordIterations: cost?.passwordCost ?? PasswordCostOptions.defaultCost,
            logger: logger
        )
    } catch {
        throw CommandError.failure("\(error)")
    }
    do {
        try await body(admin)
        await admin.close()
    } catch let error as UserError {
        await admin.close()
        // A bad name or password is the caller's input (64); an unknown user 3; a taken name 1.
        let code: ExitStatus =
            switch error.code {
            case .notFound: .notFound
            case .invalidName, .invalidPassword: .usage
            case .exists: .failure
            }
        throw CommandError(code, error.message)
    } catch let error as CommandError {
        await admin.close()
        throw error
    } catch let error as ExitCode {
        await admin.close()
        throw error
    } catch let error as OutputError {
        await admin.close()
        throw error
    } catch {
        await admin.close()
        throw CommandError.failure("\(error)")
    }
}
