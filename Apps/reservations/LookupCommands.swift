import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import Models
import SuiteClient

/// Fetches the client configuration alongside a read: the read does not wait for it, but
/// its answer (forced update) decides before anything is printed. A configuration that
/// cannot be had (offline with no copy kept, a server error) does not stop a read.
func readWithConfiguration<Value: Sendable>(
    _ client: SuiteClient,
    store: UUID? = nil,
    output: Output,
    _ fetch: @escaping @Sendable () async throws -> Fetched<Value>
) async throws -> (Fetched<Value>, ClientConfigurationResponse?) {
    async let configuration = client.clientConfiguration(store: store)
    async let value = fetch()
    var config: ClientConfigurationResponse?
    do {
        config = try await configuration.value
    } catch let error as SuiteClientError where error.code == .updateRequired {
        throw error
    } catch let error as SuiteClientError where error.code == .offline {
        config = nil
    } catch {
        output.warning("the client configuration could not be checked: \(error)")
    }
    return (try await value, config)
}

/// Shows a store's notice (flag `storeNotice`) on stderr, when it has one.
func showNotice(_ config: ClientConfigurationResponse?, for store: Store, output: Output) {
    guard let config,
        case .string(let notice)? = config.configuration.value(
            of: "storeNotice",
            for: FlagTarget(store: store)
        ),
        !notice.isEmpty
    else { return }
    output.note("notice for \(store.name): \(notice)")
}

/// Options shared by `list` and `search`.
struct ListFilters: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only these statuses (requested, confirmed, checkedIn, completed, cancelled, noShow); repeat or comma-separate.",
            valueName: "status"
        )
    )
    var status: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only this store: its id or short name (`reservations stores`).",
            valueName: "store"
        )
    )
    var store: String?

    @Option(name: .long, help: ArgumentHelp("Reservations per page (1…200).", valueName: "n"))
    var limit: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Continue after a previous page (its nextCursor).", valueName: "cursor")
    )
    var cursor: String?

    /// The list columns these filters fix (one store, one status): no need to show them.
    func fixedColumns(statuses: [Reservation.Status], oneStore: Bool) -> Set<Output.ListColumn> {
        var fixed: Set<Output.ListColumn> = []
        if oneStore { fixed.insert(.store) }
        if statuses.count == 1 { fixed.insert(.status) }
        return fixed
    }

    func validate() throws {
        _ = try statuses()
        if let store, store.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("--store needs a store id or short name")
        }
        if let limit, !(1...200).contains(limit) {
            throw ValidationError("--limit must be 1…200, got \(limit)")
        }
    }

    func statuses() throws -> [Reservation.Status] {
        try status.flatMap { $0.split(separator: ",") }.map { text in
            let name = text.trimmingCharacters(in: .whitespaces)
            guard
                let status = Reservation.Status.allCases.first(where: {
                    $0.rawValue.lowercased() == name.lowercased()
                })
            else {
                throw ValidationError(
                    "--status '\(name)' is not one of \(Reservation.Status.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            return status
        }
    }

    /// The store `--store` names (an id, or a short name the server knows), nil without it.
    func resolvedStore(_ client: SuiteClient) async throws(SuiteClientError) -> UUID? {
        guard let store else { return nil }
        return try await client.resolveStore(store.trimmingCharacters(in: .whitespaces))
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the reservations of a day, in start order.",
        discussion: """
            The day is in each reservation's store's time zone; `today` is the store's today \
            with --store, else this machine's.

            Example: reservations list --date today --store berlin-kurfuerstendamm
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp("today, tomorrow, yesterday or YYYY-MM-DD.", valueName: "day")
    )
    var date = "today"

    @OptionGroup var filters: ListFilters

    @Flag(
        name: .long,
        help:
            "Every store of the server, not only your home store (administrators; others exit 13)."
    )
    var allStores = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        _ = try TimeInput.day(date, in: .current, option: "--date")
        if allStores, filters.store != nil {
            throw ValidationError("give either --store or --all-stores, not both")
        }
    }

    func run() async throws {
        let statuses = try filters.statuses()
        try await withClient(options) { client, output in
            // Your home store (the server's answer now, not a kept guess) unless told otherwise.
            var store = try await filters.resolvedStore(client)
            if store == nil, !allStores { store = try await client.currentHomeStoreID() }
            var zone = TimeZone.current
            var config: ClientConfigurationResponse?
            if let store {
                // `today` is the store's: its time zone comes with its configuration.
                do {
                    let fetched = try await client.clientConfiguration(store: store)
                    config = fetched.value
                    if let found = fetched.value.store { zone = found.resolvedTimeZone }
                } catch let error as SuiteClientError where error.code == .offline {
                    config = nil
                }
            }
            let day = try TimeInput.day(date, in: zone, option: "--date")
            let query = ReservationQuery(
                date: day,
                statuses: statuses,
                store: store,
                allStores: allStores,
                limit: filters.limit,
                cursor: filters.cursor
            )
            let page: Fetched<Page<ReservationDetail>>
            if store == nil {
                (page, config) = try await readWithConfiguration(client, output: output) {
                    try await client.reservations(query, now: TestClock.now())
                }
            } else {
                page = try await client.reservations(query, now: TestClock.now())
            }
            output.sayIfCached(page, what: "the reservations")
            if let first = page.value.items.first {
                showNotice(config, for: first.store, output: output)
            }
            try output.printList(
                page,
                fixed: filters.fixedColumns(statuses: statuses, oneStore: store != nil)
            )
        }
    }
}

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find reservations by customer name, e-mail, phone or confirmation code.",
        discussion: """
            Upcoming reservations come first (nearest first), then past ones (most recent \
            first), as the server orders them; a partial list from kept data offline keeps \
            the same order.

            Example: reservations search weber --status confirmed
            """
    )

    @Argument(help: ArgumentHelp("What to look for.", valueName: "text"))
    var text: String

    @OptionGroup var filters: ListFilters
    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ValidationError("give some text to search for")
        }
    }

    /// Whether the text reads as a phone number in a national form (`030 1234567`): digits
    /// with spaces, dashes, dots or parentheses, no leading `+`.
    static func looksLikeNationalPhone(_ text: String) -> Bool {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.hasPrefix("+") else { return false }
        let digits = trimmed.filter(\.isASCII).filter(\.isNumber).count
        return digits >= 5
            && trimmed.allSatisfy { $0.isASCII && ($0.isNumber || " -./()".contains($0)) }
    }

    func run() async throws {
        let statuses = try filters.statuses()
        try await withClient(options) { client, output in
            let store = try await filters.resolvedStore(client)
            // A phone typed in national form is searched as the number it is in the store's
            // market (+49 30 1234567 for `030 1234567` in Germany), as `new` stores it.
            var searched = text
            if Self.looksLikeNationalPhone(text), let market = store ?? client.homeStoreID,
                let found = try? await client.clientConfiguration(store: market).value.store,
                let code = PhoneNumber.callingCode(forRegion: found.market),
                let phone = try? PhoneNumber(text, defaultCallingCode: code)
            {
                searched = phone.e164
            }
            let query = ReservationQuery(
                text: searched,
                statuses: statuses,
                store: store,
                limit: filters.limit,
                cursor: filters.cursor
            )
            let (page, _) = try await readWithConfiguration(client, output: output) {
                try await client.reservations(query, now: TestClock.now())
            }
            output.sayIfCached(page, what: "the search results")
            try output.printList(
                page,
                fixed: filters.fixedColumns(statuses: statuses, oneStore: store != nil)
            )
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one reservation, by id, code, or the QR code on a customer's pass.",
        discussion: """
            --from-image reads the pass with the suite's `scan` tool (found beside this program, \
            else on PATH); the pass holds the code or shopfloor://reservations/CODE.

            Examples:
              reservations show 41SJ-3EQ4
              reservations show --from-image pass.png
            """
    )

    @Argument(help: ArgumentHelp("A reservation id or confirmation code.", valueName: "id|code"))
    var reference: String?

    @Option(
        name: .long,
        help: ArgumentHelp("An image of the customer's pass (PNG, JPEG, …).", valueName: "file")
    )
    var fromImage: String?

    @OptionGroup var options: ClientOptions

    func validate() throws {
        switch (reference, fromImage) {
        case (nil, nil):
            throw ValidationError("give a reservation id or code, or --from-image FILE")
        case (.some, .some):
            throw ValidationError("give either an id or code, or --from-image, not both")
        default: break
        }
    }

    func run() async throws {
        try await withClient(options) { client, output in
            let parsed: ReservationReference
            if let fromImage {
                let code = try PassImage.code(in: fromImage, deadline: client.remainingTime)
                output.note("pass \(fromImage): \(code)")
                parsed = .code(code)
            } else {
                parsed = try ReservationReference(parsing: reference ?? "")
            }
            let (fetched, config) = try await readWithConfiguration(client, output: output) {
                try await client.reservation(parsed)
            }
            output.sayIfCached(fetched, what: "reservation \(parsed)")
            showNotice(config, for: fetched.value.store, output: output)
            try output.printReservation(fetched.value)
        }
    }
}
