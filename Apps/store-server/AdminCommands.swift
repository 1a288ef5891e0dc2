import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Models
import StoreServer

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending schema migrations and exit.",
        discussion: """
            With --status it changes nothing: the first stdout line is `schema version N of M: \
            up to date` or `schema version N of M: K pending`, then one `pending VERSION NAME` \
            line per step migrate would apply.
            """
    )
    @Flag(help: "Show the schema version and the pending steps; change nothing.")
    var status = false
    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        if status {
            let state: MigrationStatus
            do {
                state = try await Maintenance.migrationStatus(
                    options.location,
                    logger: options.logger("store-server")
                )
            } catch {
                throw CommandError.failure("\(error)")
            }
            let summary =
                state.current > state.latest
                ? "newer than this server"
                : state.pending.isEmpty ? "up to date" : "\(state.pending.count) pending"
            try StandardOutput.line(
                "schema version \(state.current) of \(state.latest): \(summary)"
            )
            for step in state.pending {
                try StandardOutput.line("pending \(step.version) \(step.name)")
            }
            return
        }
        try await runAdmin(options) { _ in
            if !options.common.quiet { Console.note("database \(options.location) is up to date") }
        }
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of the SQLite database to FILE (0600), while it serves.",
        discussion: """
            FILE must not exist. To restore: stop the server, copy FILE over the database file \
            (mode 0600), remove the -wal and -shm files beside it, start the server. For \
            PostgreSQL use pg_dump and pg_restore (docs/DEPLOY.md).
            """
    )
    @Argument(help: ArgumentHelp("The backup file to write.", valueName: "file")) var file: String
    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        do {
            try await Maintenance.backup(
                options.location,
                to: file,
                logger: options.logger("store-server")
            )
        } catch {
            throw CommandError.failure("\(error)")
        }
        if !options.common.quiet {
            Console.note("backup of \(options.location) written to \(file)")
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
    @OptionGroup var cost: PasswordCostOptions

    func validate() throws {
        guard demo else { throw ValidationError("say which data to load: --demo") }
    }

    func run() async throws {
        try await runAdmin(options, cost: cost) { admin in
            let summary = try await admin.seedDemo(now: TestClock.now())
            if summary.loaded {
                try StandardOutput.line(
                    "loaded \(summary.stores) stores, \(summary.customers) customers, \(summary.reservations) reservations, \(summary.products) products, users \(DemoData.username) (associate), \(DemoData.managerUsername) (manager), \(DemoData.adminUsername) (admin)"
                )
            } else {
                Console.warning("the database already has stores; demo data not loaded")
            }
        }
    }
}

/// Reads a password from stdin: everything up to the end, one trailing newline dropped.
func readPassword(for name: String) throws -> String {
    // At a terminal: asked for, with echo off (and back on after a stop signal).
    if Prompt.stdinIsTerminal {
        guard let typed = Prompt.secret("password for \(name): "), !typed.isEmpty else {
            throw CommandError.usage("no password given for \(name)")
        }
        return typed
    }
    guard let text = Prompt.readAllStandardInput() else {
        throw CommandError.usage("the password on stdin is not UTF-8")
    }
    guard !text.isEmpty else {
        throw CommandError.usage(
            "no password on stdin (pipe it in: printf '%s' \"$PASSWORD\" | store-server user add NAME)"
        )
    }
    return text
}

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage users, their roles and stores (passwords are read from stdin).",
        subcommands: [Add.self, List.self, Set.self, Passwd.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a user with a role and stores; the password comes from stdin.",
            discussion: """
                Roles: associate (their stores), manager (their stores and the stores' \
                configuration), admin (every store, users, minimum versions). A store is its id \
                or short name (GET /v1/stores shows them); the first is the home store.
                """
        )
        @Argument(help: "The user name (letters, digits, '.', '_', '-').") var name: String
        @Option(help: "The name shown to people (default: the user name).") var displayName: String?
        @Option(help: "associate, manager or admin.") var role = "associate"
        @Option(
            name: .customLong("store"),
            help: "A store of the user (repeat for more; id or short name)."
        )
        var stores: [String] = []
        @Option(help: "The home store (the same as a first --store).") var homeStore: String?
        @OptionGroup var options: DatabaseOptions
        @OptionGroup var cost: PasswordCostOptions

        func run() async throws {
            // A name that can never be added is refused before a password is asked for.
            guard Associate.isValidUsername(name) else {
                throw CommandError.usage(
                    "user name '\(name.prefix(64))' must be 1–64 letters, digits, '.', '_' or '-'"
                )
            }
            let password = try readPassword(for: name)
            try await runAdmin(options, cost: cost) { admin in
                let associate = try await admin.addUser(
                    name,
                    password: password,
                    displayName: displayName,
                    role: try parseRole(role),
                    stores: (homeStore.map { [$0] } ?? []) + stores
                )
                if !options.common.quiet {
                    Console.note("added \(associate.role) \(associate.username)")
                }
            }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change a user's role and stores (at their next request, no new sign-in).",
            discussion: "The stores given replace the user's; the first is the home store."
        )
        @Argument(help: "The user name.") var name: String
        @Option(help: "associate, manager or admin.") var role: String
        @Option(
            name: .customLong("store"),
            help: "A store of the user (repeat for more; id or short name)."
        )
        var stores: [String] = []
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await runAdmin(options) { admin in
                let associate = try await admin.setAccess(
                    name,
                    role: try parseRole(role),
                    stores: stores
                )
                if !options.common.quiet {
                    Console.note(
                        "\(associate.username) is now \(associate.role) of \(associate.storeIDs.count) store(s)"
                    )
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List users: name, display name, role, stores (JSON with --json)."
        )
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await runAdmin(options) { admin in
                let users = try await admin.listUsers()
                if options.common.json {
                    let page = Page(items: users.map(\.associate), nextCursor: nil)
                    try StandardOutput.line(
                        String(decoding: try JSONEncoder.shopfloor.encode(page), as: UTF8.self)
                    )
                } else {
                    // Stores by short name (else id), the home store first.
                    var names: [UUID: String] = [:]
                    var table = TextTable(header: ["USER", "NAME", "ROLE", "STORES"])
                    for user in users {
                        let associate = user.associate
                        var stores: [String] = []
                        for id in associate.storeIDs {
                            if names[id] == nil {
                                let store = try? await admin.store(id.uuidString)
                                names[id] = store?.shortName ?? id.uuidString
                            }
                            stores.append(names[id] ?? id.uuidString)
                        }
                        let shown =
                            associate.role.seesEveryStore
                            ? "every store" : stores.isEmpty ? "-" : stores.joined(separator: ", ")
                        table.append(
                            [associate.username, associate.displayName, "\(associate.role)", shown]
                                .map { TextTable.Cell($0) }
                        )
                    }
                    try StandardOutput.write(
                        table.render(color: false, width: Console.stdoutColumns)
                    )
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
        @OptionGroup var cost: PasswordCostOptions

        func run() async throws {
            try await runAdmin(options, cost: cost) { admin in
                // An unknown user is exit 3 before anything is asked or checked.
                guard try await admin.listUsers().contains(where: { $0.associate.username == name })
                else {
                    throw CommandError(.notFound, "user \(name.prefix(64)) does not exist")
                }
                let password = try readPassword(for: name)
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

/// `--role` as a ``Role``.
func parseRole(_ text: String) throws -> Role {
    guard let role = Role(rawValue: text) else {
        throw CommandError.usage(
            "--role '\(text.prefix(40))' is not a role; use \(Role.allCases.map(\.rawValue).joined(separator: ", "))"
        )
    }
    return role
}
