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
            answer is checked as it is typed, and asked again when it breaks a rule, with the \
            rule in the store's own time. The start, the party size, the topic and the form's \
            fields are asked for when not given; a summary is shown and the booking confirmed \
            (--yes books without asking). Values can be given with options and --field \
            NAME=VALUE; with --no-input nothing is asked and missing or invalid values end the \
            command with exit 64, listing every problem at once (so does the end of stdin). \
            Without a terminal, answers are read line by line from stdin. Times are in the \
            store's time zone: 'tomorrow 10:00', 'today 15:00', 'friday 9:30', '+2h', \
            '2025-06-02 10:00', or RFC 3339; a start in the past or outside the store's opening \
            hours (`reservations stores --json` shows them) is refused. The end defaults to the \
            store's slot length (flag reservationSlotMinutes).

            Example:
              reservations new --store 5D0F1C2A-0004-4A00-8000-000000000004 \\
                --start '2025-06-02 10:00' --topic 'Suit fitting' --party-size 2 \\
                --field givenName=Ana --field familyName=Weber \\
                --field email=ana@example.com --no-input
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store: its id or short name (default: your home store).",
            valueName: "store"
        )
    )
    var store: String?

    @Option(name: .long, help: ArgumentHelp("The start.", valueName: "time"))
    var start: String?

    @Option(name: .long, help: ArgumentHelp("The end (default: one slot).", valueName: "time"))
    var end: String?

    @Option(
        name: .long,
        help: ArgumentHelp("How many people come (asked; 1 with --no-input).", valueName: "n")
    )
    var partySize: Int?

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

    @Flag(name: .long, help: "Never ask; fail on missing or invalid values, listing every one.")
    var noInput = false

    @Flag(name: .long, help: "Book without the confirmation question.")
    var yes = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        for field in fields where !field.contains("=") {
            throw ValidationError("--field '\(field)' is not NAME=VALUE")
        }
        if let store, store.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("--store needs a store id or short name")
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
            var named: UUID?
            if let store {
                named = try await client.resolveStore(store.trimmingCharacters(in: .whitespaces))
            }
            if named == nil { named = try await client.currentHomeStoreID() }
            guard let storeID = named else {
                throw SuiteClientError(
                    .invalidInput,
                    "give the store with --store ID or short name (your account has no home store; `reservations stores` lists yours)"
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
            var asker = Asker(enabled: !noInput)
            var form = FormState()
            let zone = storeInfo.resolvedTimeZone
            let now = TestClock.now()
            let place = "\(storeInfo.timeZone) time"
            var slot = 30 * 60.0
            if case .number(let minutes)? = config.configuration.value(
                of: "reservationSlotMinutes",
                for: target
            ), minutes > 0 {
                slot = minutes * 60
            }
            // A typed time in the store's zone, and the served opening hours, as the form's
            // rule errors.
            func time(_ text: String, _ option: String) throws(RuleError) -> Date {
                do {
                    return try TimeInput.instant(text, in: zone, now: now, option: option)
                } catch {
                    throw RuleError("\(error)")
                }
            }
            func withinHours(_ startsAt: Date, _ endsAt: Date) throws(RuleError) {
                do {
                    try ReservationRules.checkOpeningHours(
                        startsAt: startsAt,
                        endsAt: endsAt,
                        store: storeInfo
                    )
                } catch {
                    throw RuleError(error.reason)
                }
            }
            let startsAt = form.obtain(
                start,
                field: "startsAt",
                option: "--start TIME",
                question: "Start (\(place), e.g. tomorrow 10:00)",
                asker: &asker,
                output: output
            ) { text throws(RuleError) -> Date in
                let instant = try time(text, "start")
                guard instant > now else {
                    throw RuleError(
                        "\(TimeInput.wall(instant, in: zone)) is in the past (it is \(TimeInput.wall(now, in: zone)) \(place))"
                    )
                }
                // The served opening hours, for the default slot (a given end is checked
                // with them again).
                try withinHours(instant, instant.addingTimeInterval(end == nil ? slot : 60))
                return instant
            }
            var endsAt = startsAt.map { $0.addingTimeInterval(slot) }
            if let startsAt, end != nil {
                endsAt = form.obtain(
                    end,
                    field: "endsAt",
                    option: "--end TIME",
                    question: "End (\(place))",
                    asker: &asker,
                    output: output
                ) { text throws(RuleError) -> Date in
                    let instant = try time(text, "end")
                    guard instant > startsAt else {
                        throw RuleError(
                            "\(TimeInput.wall(instant, in: zone)) is not after the start \(TimeInput.wall(startsAt, in: zone)) (\(place))"
                        )
                    }
                    try withinHours(startsAt, instant)
                    return instant
                }
            }
            var most = ModelLimits.partySize.upperBound
            if case .number(let limit)? = config.configuration.value(
                of: "maxPartySize",
                for: target
            ) {
                most = min(most, Int(limit))
            }
            let party = form.obtain(
                partySize.map(String.init),
                field: "partySize",
                option: "--party-size N",
                question: "Party size (1–\(most)) [1]",
                defaultAnswer: noInput ? "1" : nil,
                emptyAnswer: "1",
                asker: &asker,
                output: output
            ) { text throws(RuleError) -> Int in
                guard let count = Int(text.trimmingCharacters(in: .whitespaces)) else {
                    throw RuleError("'\(text)' is not a number of people")
                }
                guard count >= 1, count <= most else {
                    throw RuleError(
                        "\(count) is outside 1–\(most), the party sizes \(storeInfo.name) takes (its limit of \(most))"
                    )
                }
                return count
            }
            let topicText = form.obtain(
                topic,
                field: "topic",
                option: "--topic TEXT",
                question: "Topic",
                asker: &asker,
                output: output
            ) { text throws(RuleError) -> String in
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                guard !trimmed.isEmpty else { throw RuleError("must not be empty") }
                if let problem = TextSafety.lineProblem(trimmed) { throw RuleError(problem) }
                guard trimmed.count <= ModelLimits.nameLength else {
                    throw RuleError("is longer than \(ModelLimits.nameLength) characters")
                }
                return trimmed
            }
            var customerForm: [String: String]?
            if customer == nil {
                customerForm = fillForm(
                    config.configuration,
                    given: given,
                    callingCode: PhoneNumber.callingCode(forRegion: storeInfo.market),
                    asker: &asker,
                    output: output,
                    problems: &form.problems
                )
            }
            // The same person (e-mail or phone) may be a customer already: offered for reuse,
            // as the server finds them (never a local guess).
            var existing: UUID? = customer.flatMap(UUID.init(uuidString:))
            if existing == nil, form.problems.isEmpty, let values = customerForm,
                let match = try await client.existingCustomer(
                    email: values["email"],
                    phone: values["phone"]
                )
            {
                var contact = [match.displayName]
                if let email = match.email { contact.append(email.value) }
                if let phone = match.phone { contact.append(phone.e164) }
                let who = TextSafety.terminal(contact.joined(separator: ", "))
                if noInput || yes || asker.confirm("\(who) is a customer already. Book for them?") {
                    existing = match.id
                    customerForm = nil
                    output.note("booking for the existing customer \(who)")
                }
            }
            guard form.problems.isEmpty, let startsAt, let endsAt, let party, let topicText else {
                let ended = !noInput && !asker.enabled ? " (the answers ended)" : ""
                throw SuiteClientError(
                    .validationFailed,
                    "nothing was booked\(ended): \(form.problems.count == 1 ? "one value is" : "\(form.problems.count) values are") missing or invalid",
                    fieldErrors: form.problems
                )
            }
            let request: NewReservation
            do {
                request = try NewReservation(
                    storeID: storeID,
                    startsAt: startsAt,
                    endsAt: endsAt,
                    partySize: party,
                    topic: topicText,
                    notes: notes,
                    customerID: existing,
                    customer: customerForm
                )
            } catch let error as Models.ValidationError {
                throw SuiteClientError(
                    .validationFailed,
                    "the reservation is not valid",
                    fieldErrors: [APIProblem.FieldError(error)]
                )
            }
            if !noInput && !yes {
                try confirm(request, store: storeInfo, asker: &asker, output: output)
            }
            let created = try await client.createReservation(request)
            output.note(
                "booked \(created.reservation.confirmationCode) for \(created.customer.displayName), \(Output.span(created.reservation.startsAt, created.reservation.endsAt, in: created.store)) at \(created.store.name)"
            )
            try output.printReservation(created)
        }
    }

    /// The customer form: given values checked, missing or invalid ones asked for (when
    /// asking is possible), then the whole form checked once more; every problem is added to
    /// `problems` (nil is returned when there is any).
    private func fillForm(
        _ configuration: ClientConfiguration,
        given: [String: String],
        callingCode: Int?,
        asker: inout Asker,
        output: Output,
        problems: inout [APIProblem.FieldError]
    ) -> [String: String]? {
        let known = Set(configuration.customerFormFields.map(\.name))
        let unknown = given.keys.filter { !known.contains($0) }.sorted()
        for name in unknown {
            problems.append(
                APIProblem.FieldError(
                    field: name,
                    code: "unknownField",
                    message:
                        "the store's customer form has no field \(name) (fields: \(configuration.customerFormFields.map(\.name).joined(separator: ", ")))"
                )
            )
        }
        func problem(_ name: String, _ value: String) -> FormFieldError? {
            configuration.validate(form: [name: value], defaultCallingCode: callingCode).errors
                .first { $0.field == name }
        }
        var values = given.filter { known.contains($0.key) }
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
        problems += checked.errors.map(APIProblem.FieldError.init)
        return checked.isValid && unknown.isEmpty ? checked.values : nil
    }

    /// The booking as it will be made, on stderr, and the question whether to make it.
    /// - Throws: ``SuiteClientError``: `validationFailed` (64) when the answers end first,
    ///   `invalidInput` (64) for a "no": nothing was booked.
    private func confirm(
        _ request: NewReservation,
        store: Store,
        asker: inout Asker,
        output: Output
    ) throws(SuiteClientError) {
        var lines: [(String, Output.Cell)] = [
            ("Store", Output.Cell(store.name)),
            (
                "When",
                Output.Cell(
                    "\(Output.span(request.startsAt, request.endsAt, in: store)) (\(store.timeZone))"
                )
            ),
            ("Party", Output.Cell(String(request.partySize))),
            ("Topic", Output.Cell(request.topic)),
        ]
        if let form = request.customer {
            let who = form.keys.sorted().compactMap { form[$0] }.joined(separator: ", ")
            lines.append(("Customer", Output.Cell(who)))
        } else if let id = request.customerID {
            lines.append(("Customer", Output.Cell(id.uuidString)))
        }
        if let notes = request.notes {
            lines.append(("Notes", Output.Cell(notes, multiline: true)))
        }
        Console.write("\n" + output.labelled(lines))
        while true {
            guard let answer = asker.ask("Book it? [Y/n]") else {
                throw SuiteClientError(
                    .validationFailed,
                    "nothing was booked: the answers ended before the confirmation (--yes books without asking)"
                )
            }
            switch answer.lowercased() {
            case "", "y", "yes": return
            case "n", "no": throw SuiteClientError(.invalidInput, "nothing was booked")
            default: output.warning("answer y or n")
            }
        }
    }
}

/// A rule an answer broke, in the store's own terms.
struct RuleError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// The values of the booking form and every problem found with them.
struct FormState {
    var problems: [APIProblem.FieldError] = []

    /// A value from its option, else asked for until it keeps the rule (`parse`); a given
    /// value that breaks it is asked for again when asking is possible. Without asking (or
    /// at the end of the answers), a missing or invalid value is added to ``problems`` and
    /// nil returned (`defaultAnswer` is used for a value not given).
    mutating func obtain<Value>(
        _ given: String?,
        field: String,
        option: String,
        question: String,
        defaultAnswer: String? = nil,
        emptyAnswer: String? = nil,
        asker: inout Asker,
        output: Output,
        parse: (String) throws(RuleError) -> Value
    ) -> Value? {
        if let text = given ?? (asker.enabled ? nil : defaultAnswer) {
            do {
                return try parse(text)
            } catch {
                guard asker.enabled else {
                    problems.append(
                        APIProblem.FieldError(field: field, code: "invalid", message: error.message)
                    )
                    return nil
                }
                output.warning("\(field): \(error.message)")
            }
        }
        while asker.enabled {
            guard let answer = asker.ask(question) else { break }
            let text = answer.isEmpty ? (emptyAnswer ?? answer) : answer
            do {
                return try parse(text)
            } catch {
                output.warning(error.message)
            }
        }
        problems.append(
            APIProblem.FieldError(
                field: field,
                code: "missing",
                message: "is missing: give \(option)"
            )
        )
        return nil
    }
}

/// Questions on stderr, answers from stdin (a terminal, or lines a script pipes in); once
/// stdin ends, nothing more is asked.
struct Asker {
    var enabled: Bool

    /// A yes-or-no question; yes unless answered no (an empty answer is yes). At the end of
    /// the answers (or without asking) the answer is no.
    mutating func confirm(_ question: String) -> Bool {
        while let answer = ask("\(question) [Y/n]") {
            switch answer.lowercased() {
            case "", "y", "yes": return true
            case "n", "no": return false
            default: continue
            }
        }
        return false
    }

    mutating func ask(_ question: String) -> String? {
        guard enabled else { return nil }
        guard let answer = Prompt.line("\(question): ") else {
            enabled = false
            return nil
        }
        return answer.trimmingCharacters(in: .whitespaces)
    }
}
