import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import Models
import SuiteClient

/// Whether a boolean flag allows an action at a store (on unless the flag says false).
func flagAllows(_ flag: String, _ config: ClientConfigurationResponse?, store: Store) -> Bool {
    guard let config,
        case .bool(let value)? = config.configuration.value(
            of: flag,
            for: FlagTarget(store: store)
        )
    else { return true }
    return value
}

/// Check-in and cancel: the configuration first (a forced update stops before any write),
/// then the reservation when named by code (to learn its store's flags and status), then
/// the write. A reservation already in the target status is a success, said on stderr.
func transition(
    _ reference: String,
    options: ClientOptions,
    action: String,
    past: String,
    flag: String,
    target: Reservation.Status,
    call:
        @escaping @Sendable (SuiteClient, UUID) async throws(SuiteClientError) ->
        TransitionOutcome
) async throws {
    let parsed = try ReservationReference(parsing: reference)
    try await withClient(options) { client, output in
        let config = try await client.clientConfiguration().value
        let id: UUID
        switch parsed {
        case .id(let known):
            id = known
        case .code:
            let current = try await client.reservation(parsed)
            guard !current.isFromCache else {
                throw SuiteClientError(
                    .offline,
                    "offline: the \(action) of \(parsed) was not sent (writes are never queued)"
                )
            }
            let detail = current.value
            guard flagAllows(flag, config, store: detail.store) else {
                throw SuiteClientError(
                    .featureDisabled,
                    "\(action) is turned off for \(detail.store.name) (flag \(flag))"
                )
            }
            if detail.reservation.status == target {
                output.note(
                    "reservation \(detail.reservation.confirmationCode) was already \(past)"
                )
                return try output.printReservation(detail)
            }
            id = detail.id
        }
        do {
            switch try await call(client, id) {
            case .changed(let detail):
                output.note(
                    "\(past) \(detail.reservation.confirmationCode): \(detail.customer.displayName), \(Output.span(detail.reservation.startsAt, detail.reservation.endsAt, in: detail.store)) at \(detail.store.name)"
                )
                try output.printReservation(detail)
            case .alreadyDone(let detail):
                output.note(
                    "reservation \(detail.reservation.confirmationCode) was already \(past)"
                )
                try output.printReservation(detail)
            }
        } catch let error as SuiteClientError where error.code == .featureDisabled {
            throw SuiteClientError(
                .featureDisabled,
                "\(action) is turned off for this reservation's store (flag \(error.problem?.flag ?? flag))",
                status: error.status,
                problem: error.problem
            )
        } catch let error as SuiteClientError
            where error.code == .conflict && error.problem?.type == ProblemType.invalidTransition
        {
            let from = error.problem?.from?.rawValue ?? "its current status"
            throw SuiteClientError(
                .conflict,
                "reservation \(parsed) cannot be \(past): it is \(from)",
                status: error.status,
                problem: error.problem
            )
        }
    }
}

struct CheckIn: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-in",
        abstract: "Check a customer in (a second check-in exits 0 and says so on stderr).",
        discussion: "Example: reservations check-in 41SJ-3EQ4"
    )

    @Argument(help: ArgumentHelp("A reservation id or confirmation code.", valueName: "id|code"))
    var reference: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await transition(
            reference,
            options: options,
            action: "check-in",
            past: "checked in",
            flag: "checkInEnabled",
            target: .checkedIn
        ) { client, id throws(SuiteClientError) in try await client.checkIn(id) }
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a reservation (cancelling it again exits 0 and says so).",
        discussion: "Example: reservations cancel 41SJ-3EQ4"
    )

    @Argument(help: ArgumentHelp("A reservation id or confirmation code.", valueName: "id|code"))
    var reference: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await transition(
            reference,
            options: options,
            action: "cancellation",
            past: "cancelled",
            flag: "cancellationEnabled",
            target: .cancelled
        ) { client, id throws(SuiteClientError) in try await client.cancel(id) }
    }
}

struct Reschedule: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reschedule",
        abstract: "Move a reservation to another time (a change made meanwhile is a conflict).",
        discussion: """
            Times are the store's wall-clock time ('2025-06-02 10:00') or RFC 3339. Without \
            --end the reservation keeps its length. The change is sent with If-Match: the \
            version read just before, or --if-version N (the version `show` printed); when \
            someone changed the reservation since, nothing is changed and the command exits 1.

            Example: reservations reschedule 41SJ-3EQ4 --start '2025-06-02 10:00'
            """
    )

    @Argument(help: ArgumentHelp("A reservation id or confirmation code.", valueName: "id|code"))
    var reference: String

    @Option(name: .long, help: ArgumentHelp("The new start.", valueName: "time"))
    var start: String

    @Option(
        name: .long,
        help: ArgumentHelp("The new end (default: same length).", valueName: "time")
    )
    var end: String?

    @Option(name: .long, help: ArgumentHelp("The version the change is based on.", valueName: "n"))
    var ifVersion: Int?

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let parsed = try ReservationReference(parsing: reference)
        try await withClient(options) { client, output in
            _ = try await client.clientConfiguration()
            let current = try await client.reservation(parsed)
            guard !current.isFromCache else {
                throw SuiteClientError(
                    .offline,
                    "offline: the change of \(parsed) was not sent (writes are never queued)"
                )
            }
            let detail = current.value
            let zone = detail.store.resolvedTimeZone
            let newStart = try TimeInput.instant(start, in: zone, option: "--start")
            let newEnd =
                try end.map { try TimeInput.instant($0, in: zone, option: "--end") }
                ?? newStart.addingTimeInterval(detail.reservation.duration)
            let changes: ReservationChanges
            do {
                changes = try ReservationChanges(startsAt: newStart, endsAt: newEnd)
            } catch let error as Models.ValidationError {
                throw SuiteClientError(
                    .validationFailed,
                    "the new time is not valid: \(error.field) \(error.reason)"
                )
            }
            let updated: ReservationDetail
            do {
                updated = try await client.reschedule(
                    detail.id,
                    version: ifVersion ?? detail.reservation.version,
                    changes: changes
                )
            } catch let error as SuiteClientError where error.code == .validationFailed {
                // The server's refusal in words (a time outside the opening hours says them).
                let reasons = error.fieldErrors.map(\.message)
                throw SuiteClientError(
                    .validationFailed,
                    "\(parsed) was not moved: "
                        + (reasons.isEmpty ? error.message : reasons.joined(separator: "; ")),
                    status: error.status,
                    problem: error.problem
                )
            }
            output.note(
                "moved \(updated.reservation.confirmationCode) to \(Output.span(updated.reservation.startsAt, updated.reservation.endsAt, in: updated.store)) (version \(updated.reservation.version))"
            )
            try output.printReservation(updated)
        }
    }
}
