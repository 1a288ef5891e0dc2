import ArgumentParser
import CommandSupport
import Foundation
import Models
import StoreServer

struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Manage stores (their opening hours).",
        subcommands: [Hours.self]
    )

    struct Hours: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hours",
            abstract: "Show or set a store's opening hours, in the store's local time.",
            discussion: """
                Reservations are taken only within the hours of the day they start on; a store \
                without hours takes them at any time (setting one day starts from open all \
                day, every day). Days: a weekday (monday or mon), a range (mon-fri) or all. \
                Hours: HH:MM-HH:MM (24:00 closes at midnight) or closed. Without days and \
                hours, the current week is printed. Exit 3 for an unknown store, 64 for days \
                or hours that cannot be read.

                Examples:
                  store-server store hours berlin-kurfuerstendamm mon-sat 09:00-20:00
                  store-server store hours berlin-kurfuerstendamm sunday closed
                """
        )
        @Argument(help: ArgumentHelp("The store's id or short name.", valueName: "store"))
        var store: String
        @Argument(
            help: ArgumentHelp("A weekday, a range of them (mon-fri) or all.", valueName: "days")
        )
        var days: String?
        @Argument(help: ArgumentHelp("HH:MM-HH:MM or closed.", valueName: "hours"))
        var hours: String?
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            if days != nil, hours == nil {
                throw ValidationError("give the hours after the days: HH:MM-HH:MM or closed")
            }
        }

        func run() async throws {
            try await runAdmin(options) { admin in
                // An unknown store is exit 3 before the days and hours are read.
                var found = try await admin.store(store)
                if let days, let hours {
                    guard let weekdays = OpeningHours.weekdays(parsing: days) else {
                        throw CommandError.usage(
                            "days '\(days.prefix(40))' are not a weekday (monday or mon), a range (mon-fri) or all"
                        )
                    }
                    var span: OpeningHours.Span?
                    if hours.lowercased() != "closed" {
                        do {
                            span = try OpeningHours.Span(parsing: hours)
                        } catch {
                            let reason = (error as? Models.ValidationError)?.reason ?? "\(error)"
                            throw CommandError.usage("hours '\(hours.prefix(40))': \(reason)")
                        }
                    }
                    found = try await admin.setOpeningHours(found, days: weekdays, span: span)
                }
                try Self.print(found, json: options.common.json)
            }
        }

        static func print(_ store: Store, json: Bool) throws {
            if json {
                try StandardOutput.line(
                    String(decoding: try JSONEncoder.shopfloor.encode(store), as: UTF8.self)
                )
                return
            }
            guard let hours = store.openingHours else {
                try StandardOutput.line(
                    "\(store.name): no opening hours (reservations at any time)"
                )
                return
            }
            try StandardOutput.line("\(store.name) (\(store.timeZone) time): \(hours)")
            for day in OpeningHours.Weekday.allCases {
                try StandardOutput.line(
                    "\(day.name)\t\(hours.span(on: day)?.description ?? "closed")"
                )
            }
        }
    }
}
