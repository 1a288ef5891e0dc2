import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import Models
import SuiteClient

struct New: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Book a reservation, asking for the customer fields the store's form defines.",
        discussion: """
            The customer form comes from the store's configuration (`reservations config`); each \
            answer is checked as it is typed, and asked again when it breaks a rule. Values can \
            be given with --field NAME=VALUE; with --no-input nothing is asked and missing or \
            invalid values end the command with exit 64, listing every problem. Without a \
            terminal, answers are read line by line from stdin. Times are the store's \
            wall-clock time ('2025-06-02 10:00') or RFC 3339; the end defaults to the store's \
            slot length (flag reservationSlotMinutes).

            Example:
              reservations new --store 5D0F1C2A-0004-4A00-8000-000000000004 \\
                --start '2025-06-02 10:00' --topic 'Suit fitting' --party-size 2 \\
                --field givenName=Ana --field familyName=Weber --field email=ana@example.com --no-input
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp("The store (default: your home store).", valueName: "id")
    )
    var store: String?

    @Option(name: .long, help: ArgumentHelp("The start.", valueName: "time"))
    var start: String?

    @Option(name: .long, help: ArgumentHelp("The end (default: one slot).", valueName: "time"))
    var end: String?

    @Option(name: .long, help: ArgumentHelp("How many people come.", valueName: "n"))
    var partySize = 1

    @Option(name: .long, help: ArgumentHelp("What it is about.", valueName: "text"))
    var topic: String?

    @Option(name: .long, help: ArgumentHelp("Notes.", valueName: "text"))
    var notes: String?

    @Option(
        name: .long,
        help: ArgumentHelp("An existing customer's id (no form then).", valueName: "id")
    )
    var customer: String?

    @Option(
        name: .customLong("field"),
        help: ArgumentHelp("A customer form value; repeat for each field.", valueName: "name=value")
    )
    var fields: [String] = []

    @Flag(name: .long, help: "Never ask; fail on missing or invalid values.")
    var noInput = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        for field in fields where !field.contains("=") {
            throw ValidationError("--field '\(field)' is not NAME=VALUE")
        }
        if let store, UUID(uuidString: store) == nil {
            throw ValidationError("--store '\(store)' is not a store id (a UUID)")
        }
        if let customer, UUID(uuidString: customer) == nil {
            throw ValidationError("--customer '\(customer)' is not a customer id (a UUID)")
        }
        if customer != nil, !fields.isEmpty {
            throw ValidationError("give either --customer or --field values, not both")
        }
    }

    func run() async throws {
        var given: [String: String] = [:]
        for field in fields {
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            given[String(parts[0])] = String(parts[1])
        }
        try await withClient(options) { client, output in
            guard let storeID = store.flatMap(UUID.init(uuidString:)) ?? client.homeStoreID else {
                throw SuiteClientError(
                    .invalidInput,
                    "give the store with --store ID (your account has no home store)"
                )
            }
            let fetched = try await client.clientConfiguration(store: storeID)
            guard !fetched.isFromCache else {
                throw SuiteClientError(
                    .offline,
                    "offline: the new reservation was not sent (writes are never queued)"
                )
            }
            let config = fetched.value
            guard let storeInfo = config.store else {
                throw SuiteClientError(.server, "the server did not describe store \(storeID)")
            }
            guard flagAllows("newReservationsEnabled", config, store: storeInfo) else {
                throw SuiteClientError(
                    .featureDisabled,
                    "new reservations are turned off for \(storeInfo.name) (flag newReservationsEnabled)"
                )
            }
            let target = FlagTarget(store: storeInfo)
            if case .number(let most)? = config.configuration.value(of: "maxPartySize", for: target),
                Double(partySize) > most
            {
                throw SuiteClientError(
                    .validationFailed,
                    "--party-size \(partySize) is above \(storeInfo.name)'s limit of \(Int(most))"
                )
            }
            var asker = Asker(enabled: !noInput)
            let zone = storeInfo.resolvedTimeZone
            guard
                let startText = start
                    ?? asker.ask("start (YYYY-MM-DD HH:MM, \(storeInfo.timeZone))")
            else {
                throw SuiteClientError(.validationFailed, "the start is missing: give --start TIME")
            }
            let startsAt: Date
            do { startsAt = try TimeInput.instant(startText, in: zone, option: "--start") } catch {
                throw SuiteClientError(.validationFailed, "\(error)")
            }
            var endsAt = startsAt.addingTimeInterval(30 * 60)
            if case .number(let minutes)? = config.configuration.value(
                of: "reservationSlotMinutes",
                for: target
            ), minutes > 0 {
                endsAt = startsAt.addingTimeInterval(minutes * 60)
            }
            if let end {
                do { endsAt = try TimeInput.instant(end, in: zone, option: "--end") } catch {
                    throw SuiteClientError(.validationFailed, "\(error)")
                }
            }
            guard let topicText = topic ?? asker.ask("topic") else {
                throw SuiteClientError(.validationFailed, "the topic is missing: give --topic TEXT")
            }
            var form: [String: String]?
            if customer == nil {
                form = try fillForm(
                    config.configuration,
                    given: given,
                    callingCode: PhoneNumber.callingCode(forRegion: storeInfo.market),
                    asker: &asker,
                    output: output
                )
            }
            let request: NewReservation
            do {
                request = try NewReservation(
                    storeID: storeID,
                    startsAt: startsAt,
                    endsAt: endsAt,
                    partySize: partySize,
                    topic: topicText,
                    notes: notes,
                    customerID: customer.flatMap(UUID.init(uuidString:)),
                    customer: form
                )
            } catch let error as Models.ValidationError {
                throw SuiteClientError(
                    .validationFailed,
                    "the reservation is not valid",
                    fieldErrors: [APIProblem.FieldError(error)]
                )
            }
            let created = try await client.createReservation(request)
            output.note(
                "booked \(created.reservation.confirmationCode) for \(created.customer.displayName), \(Output.span(created.reservation.startsAt, created.reservation.endsAt, in: created.store)) at \(created.store.name)"
            )
            try output.printReservation(created)
        }
    }

    /// The customer form: given values checked, missing or invalid ones asked for (when
    /// asking is possible), then the whole form checked once more.
    private func fillForm(
        _ configuration: ClientConfiguration,
        given: [String: String],
        callingCode: Int?,
        asker: inout Asker,
        output: Output
    ) throws(SuiteClientError) -> [String: String] {
        let known = Set(configuration.customerFormFields.map(\.name))
        let unknown = given.keys.filter { !known.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw SuiteClientError(
                .validationFailed,
                "the store's customer form has no field \(unknown.joined(separator: ", ")) (fields: \(configuration.customerFormFields.map(\.name).joined(separator: ", ")))"
            )
        }
        func problem(_ name: String, _ value: String) -> FormFieldError? {
            configuration.validate(form: [name: value], defaultCallingCode: callingCode).errors
                .first { $0.field == name }
        }
        var values = given
        for field in configuration.customerFormFields {
            var value = values[field.name]
            if let current = value, let error = problem(field.name, current), asker.enabled {
                output.warning(error.message)
                value = nil
            }
            while value == nil, asker.enabled {
                var question = field.label
                if let options = field.options {
                    question += " [\(options.joined(separator: "/"))]"
                }
                if !field.required { question += " (optional)" }
                guard let answer = asker.ask(question) else { break }
                if answer.isEmpty && !field.required { break }
                if let error = problem(field.name, answer) {
                    output.warning(error.message)
                    continue
                }
                value = answer
            }
            values[field.name] = value
        }
        let checked = configuration.validate(
            form: values.filter { !$0.value.isEmpty },
            defaultCallingCode: callingCode
        )
        guard checked.isValid else {
            throw SuiteClientError(
                .validationFailed,
                "the customer's details do not fit the store's form",
                fieldErrors: checked.errors.map(APIProblem.FieldError.init)
            )
        }
        return checked.values
    }
}

/// Questions on stderr, answers from stdin (a terminal, or lines a script pipes in); once
/// stdin ends, nothing more is asked.
struct Asker {
    var enabled: Bool

    mutating func ask(_ question: String) -> String? {
        guard enabled else { return nil }
        guard let answer = Prompt.line("\(question): ") else {
            enabled = false
            return nil
        }
        return answer.trimmingCharacters(in: .whitespaces)
    }
}
