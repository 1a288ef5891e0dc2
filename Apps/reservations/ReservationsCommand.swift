import ArgumentParser
import ClientCommands
import CommandSupport
import Models

/// `reservations`: store staff's lookups and check-ins from a terminal, on store-server.
@main
struct ReservationsCommand: SuiteCommand {
    static let configuration = CommandConfiguration(
        commandName: "reservations",
        abstract: "Find, check in, change and book customer reservations on the store server.",
        discussion: """
            Sign in once with `reservations login`: the session and the server URL are kept in \
            the suite container (SHOPFLOOR_HOME) and every suite app uses them. The server is \
            --server, else SHOPFLOOR_SERVER, else the URL stored at sign-in, else \
            http://127.0.0.1:8080.

            A reservation is named by its id (a UUID) or its confirmation code (XXXX-XXXX, any \
            case, hyphen optional, or a pass's shopfloor://reservations/CODE).

            Output: an aligned table when stdout is a terminal (times in the store's time \
            zone; colour unless NO_COLOR is set), JSON otherwise or with --json: lists as \
            {"items": [...], "nextCursor": ...}, a reservation with its customer and store \
            embedded. Messages go to stderr.

            Network: connect timeout 2 s (--connect-timeout), whole command 30 s (--deadline). \
            When the server cannot be reached, show, search and list answer from the data \
            fetched last, saying so on stderr with its age; writes are never queued.

            Exit codes:
              0    success (an empty list too; a second check-in says so on stderr)
              1    error (server failure, conflict, action turned off for the store, ...)
              3    no such reservation or store
              5    update required: the server needs a newer reservations
              6    offline, and no data kept from an earlier run to answer with
              13   not permitted: your role or stores do not allow it
              64   usage error, or values that break the store's rules
              77   sign-in required (or refused)
              130  interrupted (SIGINT), 143 terminated (SIGTERM)

            Examples:
              reservations login --server http://127.0.0.1:8080 --user demo
              reservations stores
              reservations list --date today --store berlin-kurfuerstendamm
              reservations search weber
              reservations show 41SJ-3EQ4
              reservations show --from-image pass.png
              reservations check-in 41SJ-3EQ4
              reservations reschedule 41SJ-3EQ4 --start '2025-06-02 10:00'
              reservations new --field givenName=Ana --field familyName=Weber \\
                --start '2025-06-02 10:00' --topic 'Suit fitting' --no-input
            """,
        version: SuiteVersion.current,
        subcommands: [
            Login<ReservationsCommand>.self, Logout<ReservationsCommand>.self,
            Whoami<ReservationsCommand>.self, List.self, Search.self, Show.self,
            CheckIn.self, Cancel.self, Reschedule.self, New.self, Stores.self, Config.self,
        ]
    )
}

extension ReservationsCommand: SuiteClientApp {
    static var appName: String { "reservations" }
}

/// The shared client options, named after this app.
typealias ClientOptions = ClientCommands.ClientOptions<ReservationsCommand>
