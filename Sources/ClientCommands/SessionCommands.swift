public import ArgumentParser
import CommandSupport
import Foundation
import Models
import SuiteClient

/// `APP login`: signs in once for every suite app; the session and the server URL are kept
/// in the suite container.
public struct Login<App: SuiteClientApp>: AsyncParsableCommand {
    /// `login`, its help.
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "login",
            abstract:
                "Sign in once for every suite app (the session is kept in the suite container).",
            discussion: """
                Asks for the password without echo on a terminal; scripts pipe it in with \
                --password-stdin. The server URL is stored too: later commands of every suite app \
                use it unless --server or SHOPFLOOR_SERVER says otherwise.

                Example:
                  printf '%s' "$PASSWORD" | \(App.appName) login --user demo --password-stdin
                """
        )
    }

    /// `--user NAME`; asked for on a terminal when not given.
    @Option(name: .long, help: ArgumentHelp("The user name.", valueName: "name"))
    public var user: String?

    /// `--password-stdin`: the password is all of stdin (one trailing newline dropped).
    @Flag(name: .long, help: "Read the password from stdin (everything up to its end).")
    public var passwordStdin = false

    /// The server and timeouts, the common flags.
    @OptionGroup public var options: ClientOptions<App>

    /// The command with its defaults (the argument parser fills it in).
    public init() {}

    /// Runs the command.
    public func run() async throws {
        try await withClient(options) { client, output in
            let username: String
            if let user {
                username = user
            } else if Prompt.stdinIsTerminal, !passwordStdin {
                guard let typed = Prompt.line("user name: "), !typed.isEmpty else {
                    throw SuiteClientError(.invalidInput, "no user name given")
                }
                username = typed
            } else {
                throw SuiteClientError(.invalidInput, "give the user name with --user NAME")
            }
            let password: String
            if passwordStdin {
                guard let text = Prompt.readAllStandardInput(), !text.isEmpty else {
                    throw SuiteClientError(
                        .invalidInput,
                        "no password on stdin (printf '%s' \"$PASSWORD\" | \(App.appName) login --user \(username) --password-stdin)"
                    )
                }
                password = text
            } else if Prompt.stdinIsTerminal {
                guard let typed = Prompt.secret("password for \(username) on \(client.server): "),
                    !typed.isEmpty
                else {
                    throw SuiteClientError(.invalidInput, "no password given")
                }
                password = typed
            } else {
                throw SuiteClientError(
                    .invalidInput,
                    "stdin is not a terminal to ask for the password: use --password-stdin"
                )
            }
            let associate = try await client.signIn(username: username, password: password)
            output.note(
                "signed in as \(associate.username) (\(associate.displayName)) on \(client.server); every suite app uses this sign-in"
            )
            if output.json { try output.printJSON(associate) }
        }
    }
}

/// `APP logout`: signs every suite app out (revoked on the server that issued the session)
/// and removes every suite app's server data kept for offline use, saying what it removed.
public struct Logout<App: SuiteClientApp>: AsyncParsableCommand {
    /// `logout`, its help.
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "logout",
            abstract:
                "Sign every suite app out and remove the server data every suite app kept for offline use.",
            discussion: """
                Removes the token file, revokes the session on the server that issued it, and \
                removes what every suite app kept for offline use (reservations, customers' \
                names, e-mails and phones, products, product images), saying what it removed. \
                Works offline too: the session is then removed here and expires on the server.
                """
        )
    }

    /// `--keep-cache`: sign out but keep the offline copies.
    @Flag(name: .long, help: "Keep the data kept for offline use (only the session ends).")
    public var keepCache = false

    /// The server and timeouts, the common flags.
    @OptionGroup public var options: ClientOptions<App>

    /// The command with its defaults (the argument parser fills it in).
    public init() {}

    /// Runs the command.
    public func run() async throws {
        try await withClient(options) { client, output in
            // Revoked where it was issued, whatever --server says.
            let issuer = client.session?.server ?? client.server.description
            let report = try await client.signOut(keepCache: keepCache)
            switch report.outcome {
            case .notSignedIn: output.note("not signed in")
            case .revoked: output.note("signed out of \(issuer)")
            case .localOnly(let reason):
                output.warning(
                    "signed out here, but the server could not be told (\(reason)); the session ends there when it expires"
                )
            }
            if keepCache {
                output.note("kept the data kept for offline use (--keep-cache)")
            } else if report.removed.isEmpty {
                output.note("no data was kept for offline use")
            } else {
                let parts = report.removed.map { "\($0.count) \($0.what)" }
                output.note("removed \(parts.joined(separator: ", "))")
            }
        }
    }
}

/// `APP whoami`: who is signed in, and on which server; the stored session when offline
/// (exit 77 when nobody is signed in).
public struct Whoami<App: SuiteClientApp>: AsyncParsableCommand {
    /// `whoami`, its help.
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "whoami",
            abstract: "Show who is signed in, and on which server (exit 77 when nobody is)."
        )
    }

    /// The server and timeouts, the common flags.
    @OptionGroup public var options: ClientOptions<App>

    /// The command with its defaults (the argument parser fills it in).
    public init() {}

    /// Runs the command.
    public func run() async throws {
        try await withClient(options) { client, output in
            guard let session = client.session else {
                throw SuiteClientError(
                    .signInRequired,
                    "not signed in (run `\(App.appName) login`)"
                )
            }
            do {
                _ = try await client.clientConfiguration()
            } catch let error as SuiteClientError where error.code == .offline {
                // Offline: the stored session is still worth showing.
            }
            let associate: Associate
            do {
                associate = try await client.me()
            } catch let error as SuiteClientError where error.code == .offline {
                output.warning("offline: \(error.message); showing the stored session")
                let name = session.username ?? "?"
                if output.json {
                    try output.printJSON(
                        WhoamiJSON(
                            username: name,
                            displayName: nil,
                            homeStoreID: nil,
                            role: nil,
                            storeIDs: nil,
                            server: session.server,
                            offline: true
                        )
                    )
                } else {
                    try output.writeOut(TextSafety.terminal("\(name) on \(session.server)") + "\n")
                }
                return
            }
            if output.json {
                return try output.printJSON(
                    WhoamiJSON(
                        username: associate.username,
                        displayName: associate.displayName,
                        homeStoreID: associate.homeStoreID,
                        role: associate.role.rawValue,
                        storeIDs: associate.storeIDs,
                        server: client.server.description,
                        offline: false
                    )
                )
            }
            var text = "\(associate.username) (\(associate.displayName)) on \(client.server)"
            if let home = associate.homeStoreID { text += ", home store \(home.uuidString)" }
            text += "; role \(associate.role)"
            if associate.role.seesEveryStore {
                text += " (every store)"
            } else {
                let count = associate.storeIDs.count
                let stores = "\(count) store\(count == 1 ? "" : "s")"
                text += ", \(stores) (`\(App.appName) stores` lists them)"
            }
            try output.writeOut(TextSafety.terminal(text) + "\n")
        }
    }
}

/// `whoami --json`, one shape online and offline: the associate's fields as the server
/// gives them (`displayName`, `homeStoreID`, `role` and `storeIDs` only when known: online;
/// left out otherwise, so the online form decodes as Models' `Associate`), the server, and
/// whether the answer is the stored session only (`offline`).
struct WhoamiJSON: Encodable {
    var username: String
    var displayName: String?
    var homeStoreID: UUID?
    var role: String?
    var storeIDs: [UUID]?
    var server: String
    var offline: Bool
}
