import ArgumentParser
import ClientCommands
import CommandSupport
import Models

/// `catalog`: products and their images from store-server, from a terminal.
@main
struct CatalogCommand: SuiteCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Search products, show them with their images, and read their barcodes.",
        discussion: """
            Uses the suite's one sign-in (`catalog login` or `reservations login`: the session \
            and server URL are kept in the suite container, SHOPFLOOR_HOME). The server is \
            --server, else SHOPFLOOR_SERVER, else the URL stored at sign-in, else \
            http://127.0.0.1:8080.

            Output: a table or the product's details (and its image drawn in 24-bit colour, \
            or shades when NO_COLOR is set) when stdout is a terminal; JSON otherwise or with \
            --json. Messages and progress go to stderr.

            Images: kept in the suite container's image cache (`images`, 256 MiB), shared by \
            every suite tool and process; fresh copies are used without the network, stale \
            ones revalidated (ETag), and offline a kept copy is shown, saying how old it is.

            Network: connect timeout 2 s (--connect-timeout), whole command 30 s (--deadline; \
            prefetch 600 s). When the server cannot be reached, search and show answer from \
            the data fetched last, saying so on stderr.

            Exit codes:
              0    success (an empty search too)
              1    error (server failure, unreadable image file, no code in the image, ...)
              3    no such product (or it has no image to save)
              5    update required: the server needs a newer catalog
              6    offline, and no data kept from an earlier run to answer with
              13   not permitted: your role or stores do not allow it
              64   usage error (a malformed GTIN, ...)
              77   sign-in required (or refused)
              130  interrupted (SIGINT), 143 terminated (SIGTERM)

            Examples:
              catalog search kettle
              catalog show 4006381333931
              catalog show 4006381333931 --image-save kettle.png
              catalog lookup --from-image label.png
              catalog prefetch --query kettle
              catalog cache stats
            """,
        version: SuiteVersion.current,
        subcommands: [
            Search.self, Show.self, Lookup.self, Prefetch.self, CacheCommand.self,
            Login<CatalogCommand>.self,
            Logout<CatalogCommand>.self, Whoami<CatalogCommand>.self,
        ]
    )
}

extension CatalogCommand: SuiteClientApp {
    static var appName: String { "catalog" }
    static var deadlineHelp: String {
        "Seconds the whole command may take (default 30; prefetch 600)."
    }
}

/// The shared client options, named after this app.
typealias ClientOptions = ClientCommands.ClientOptions<CatalogCommand>
