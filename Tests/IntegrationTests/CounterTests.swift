import ChildProcesses
import CommandSupport
import Foundation
import Models
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Drives a command in a pseudo-terminal (Python's `pty`), answering each prompt as it
/// appears: the first rule whose key the prompt line contains gives the next of its answers
/// (the last one again once they are used up). Returns the exit status and everything the
/// terminal showed.
func runInTerminal(
    _ command: [String],
    environment: [String: String],
    answers: [(String, [String])],
    columns: Int = 100
) async throws -> (status: Int32, screen: String) {
    let script = """
        import json, os, pty, select, struct, fcntl, termios, sys, time
        command = json.loads(sys.argv[1]); rules = json.loads(sys.argv[2])
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(command[0], command)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, \(columns), 0, 0))
        screen = b""; pending = b""; end = time.time() + 60
        while time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                line = pending.decode("utf-8", "replace").rsplit("\\n", 1)[-1]
                if line.rstrip().endswith(":"):
                    rule = next((r for r in rules if r[0] in line), None)
                    if rule is not None:
                        answer = rule.pop(1) if len(rule) > 2 else rule[1]
                        os.write(fd, (answer + "\\n").encode()); pending = b""
                continue
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            screen += data; pending += data
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(screen.decode("utf-8", "replace"))
        sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
        """
    let encodedCommand = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
    let encodedRules = String(
        decoding: try JSONEncoder().encode(answers.map { [$0.0] + $0.1 }),
        as: UTF8.self
    )
    let run = try await CommandRunner.run(
        URL(fileURLWithPath: "/usr/bin/python3"),
        ["-c", script, encodedCommand, encodedRules],
        environment: environment
    )
    return (run.status, run.stdout)
}

/// Issue 28's client points at the counter and at a terminal, as real processes: the
/// booking form, relative times, every problem at once, fitted tables, the next page as a
/// command, "did you mean", a subcommand's own usage, national phone forms.
@Suite("A store's day at the counter", .serialized)
struct CounterTests {
    /// Berlin's time zone, the demo associate's home store.
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    /// The instant of `day` days from today (by the fixed clock) at `hour`:`minute` in Berlin.
    static func berlinTime(days: Int, hour: Int, minute: Int = 0, now: Date = FixedClock.now)
        -> Date
    {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = berlin
        let today = calendar.startOfDay(for: now)
        let day = calendar.date(byAdding: .day, value: days, to: today)!
        return calendar.date(bySettingHour: hour, minute: minute, second: 0, of: day)!
    }

    @Test("A mistyped command gets a suggestion; a subcommand's error shows its own usage")
    func didYouMean() async throws {
        let station = try Workstation()
        defer { station.remove() }
        let typo = try await station.run(["lst"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("did you mean 'list'?"), "\(typo.stderr)")
        let nothingClose = try await station.run(["zzzzzz"])
        #expect(nothingClose.status == 64)
        #expect(nothingClose.stderr.contains("is not a reservations command"))
        #expect(!nothingClose.stderr.contains("did you mean"))
    }

    @Test(
        "Booking takes relative times in the store's zone, lists every problem at once, refuses the past"
    )
    func bookingRules() async throws {
        let server = try await StoreServerProcess.scratch("counter-book")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let store = DemoStores.berlin.uuidString
        let customer = [
            "--field", "givenName=Ana", "--field", "familyName=Weber", "--field",
            "email=ana@example.com",
        ]

        // Everything missing: every problem at once, exit 64.
        let empty = try await station.run(["new", "--store", store, "--no-input"])
        #expect(empty.status == 64)
        for field in ["startsAt", "topic", "givenName", "familyName"] {
            #expect(empty.stderr.contains("\(field):"), "\(field) not listed: \(empty.stderr)")
        }

        // Relative times, in Berlin's zone; the second booking finds Ana (same e-mail) on the
        // server and books for her instead of making a second customer.
        var customers: [UUID] = []
        for (text, expected) in [
            ("tomorrow 10:00", Self.berlinTime(days: 1, hour: 10)),
            ("tomorrow 9:30", Self.berlinTime(days: 1, hour: 9, minute: 30)),
        ] {
            let run = try await station.run(
                [
                    "new", "--store", store, "--start", text, "--topic", "Fitting",
                    "--party-size", "2", "--no-input", "--json",
                ] + customer
            )
            #expect(run.status == 0, "\(text): \(run.stderr)")
            let created = try decode(ReservationDetail.self, run)
            #expect(created.reservation.startsAt == expected, "\(text)")
            #expect(created.reservation.partySize == 2)
            customers.append(created.customer.id)
            if customers.count == 2 {
                #expect(run.stderr.contains("booking for the existing customer"), "\(run.stderr)")
            }
        }
        #expect(Set(customers).count == 1)
        let later = try await station.run(
            [
                "new", "--store", store, "--start", "+3h", "--topic", "Fitting", "--no-input",
                "--json",
            ] + customer
        )
        #expect(later.status == 0, "\(later.stderr)")
        // Exactly three hours after the fixed clock's now.
        #expect(
            try decode(ReservationDetail.self, later).reservation.startsAt
                == FixedClock.now + 3 * 3_600
        )

        // The past and an end before the start, said in the store's time.
        let past = try await station.run(
            ["new", "--store", store, "--start", "2020-01-06 10:00", "--topic", "x", "--no-input"]
                + customer
        )
        #expect(past.status == 64)
        #expect(past.stderr.contains("2020-01-06 10:00 is in the past"), "\(past.stderr)")
        let backwards = try await station.run(
            [
                "new", "--store", store, "--start", "tomorrow 10:00", "--end", "tomorrow 9:00",
                "--topic", "x", "--no-input",
            ] + customer
        )
        #expect(backwards.status == 64)
        #expect(backwards.stderr.contains("is not after the start"), "\(backwards.stderr)")
        #expect(backwards.stderr.contains("Europe/Berlin time"), "\(backwards.stderr)")

        // A bad time in a subcommand: that subcommand's usage, not the top-level one.
        let code = try decode(ReservationDetail.self, later).reservation.confirmationCode
        let badStart = try await station.run([
            "reschedule", code.description, "--start", "soon-ish",
        ])
        #expect(badStart.status == 64)
        #expect(badStart.stderr.contains("Usage: reservations reschedule"), "\(badStart.stderr)")
    }

    @Test("At a terminal the form asks every value, asks again with the rule, and confirms")
    func interactiveBooking() async throws {
        let server = try await StoreServerProcess.scratch("counter-tty")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let (booked, shown) = try await runInTerminal(
            [
                CommandRunner.builtBinary("reservations").path, "new", "--store",
                DemoStores.berlin.uuidString,
            ],
            environment: station.environment,
            answers: [
                ("Start", ["yesterday 10:00", "tomorrow 10:00"]), ("Party", ["9", ""]),
                ("Topic", ["Suit fitting"]), ("First name", ["Ana"]), ("Last name", ["Weber"]),
                ("E-mail", ["ana@", "ana@example.com"]), ("optional", [""]), ("Book it", ["y"]),
            ]
        )
        // Each bad answer is asked again with the rule, in the store's own terms.
        #expect(shown.contains("is in the past"), "\(shown)")
        #expect(shown.contains("Europe/Berlin time"), "\(shown)")
        #expect(shown.contains("9 is outside 1–"), "\(shown)")
        #expect(shown.contains("E-mail is not an e-mail address"), "\(shown)")
        #expect(booked == 0, "\(shown)")
        #expect(shown.contains("Suit fitting"))
        #expect(shown.contains("Book it? [Y/n]"))
        #expect(shown.contains("booked "), "\(shown)")

        // The same person again (same e-mail), the store by its short name: offered for reuse
        // and booked for the customer the server found, in one pass with no error.
        let (again, second) = try await runInTerminal(
            [
                CommandRunner.builtBinary("reservations").path, "new", "--store",
                "berlin-kurfuerstendamm",
            ],
            environment: station.environment,
            answers: [
                ("Start", ["tomorrow 11:00"]), ("Party", [""]), ("Topic", ["Hemming"]),
                ("First name", ["Ana"]), ("Last name", ["Weber"]),
                ("E-mail", ["ana@example.com"]), ("optional", [""]),
                ("customer already", ["y"]), ("Book it", ["y"]),
            ]
        )
        #expect(again == 0, "\(second)")
        #expect(second.contains("is a customer already"), "\(second)")
        #expect(second.contains("booking for the existing customer"), "\(second)")
        #expect(!second.contains("error:"), "\(second)")
        let listed = try await station.run(["search", "ana@example.com", "--json"])
        let found = try decode(Page<ReservationDetail>.self, listed).items
        #expect(found.count == 2)
        #expect(Set(found.map(\.customer.id)).count == 1, "two customers for one person")
    }

    @Test(
        "At the fixed date an existing customer is booked for tomorrow 10:00 in one pass; hours are kept"
    )
    func bookingAtFixedDate() async throws {
        let server = try await StoreServerProcess.scratch("counter-hours")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let listed = try await station.run([
            "search", "example.com", "--store", "berlin-kurfuerstendamm", "--limit", "1", "--json",
        ])
        let known = try #require(try decode(Page<ReservationDetail>.self, listed).items.first)
            .customer
        let email = try #require(known.email).value

        // One pass of the form, no error: "tomorrow 10:00" is Thursday 10:00 in Berlin.
        let (booked, shown) = try await runInTerminal(
            [
                CommandRunner.builtBinary("reservations").path, "new", "--store",
                "berlin-kurfuerstendamm", "--json",
            ],
            environment: station.environment,
            answers: [
                ("Start", ["tomorrow 10:00"]), ("Party", [""]), ("Topic", ["Alterations"]),
                ("First name", [known.givenName]), ("Last name", [known.familyName]),
                ("E-mail", [email]), ("optional", [""]), ("customer already", ["y"]),
                ("Book it", ["y"]),
            ]
        )
        #expect(booked == 0, "\(shown)")
        #expect(!shown.contains("error:") && !shown.contains("warning:"), "\(shown)")
        #expect(shown.contains("booking for the existing customer"), "\(shown)")
        let mine = try await station.run(["search", email, "--json"])
        let found = try decode(Page<ReservationDetail>.self, mine).items
        // Search lists upcoming first by the same fixed clock, on the server's side.
        #expect(
            found.map(\.id)
                == found.sorted(by: ReservationDetail.upcomingFirst(now: FixedClock.now)).map(\.id)
        )
        #expect(found.contains { $0.reservation.endsAt <= FixedClock.now }, "no past reservation")
        let made = try #require(found.first { $0.reservation.topic == "Alterations" })
        #expect(made.reservation.startsAt == Self.berlinTime(days: 1, hour: 10))
        #expect(made.customer.id == known.id)

        // Outside the served hours (Berlin: Mon–Sat 09:00-20:00, closed on Sundays) the form
        // says the hours in the store's time and asks again.
        let (again, screen) = try await runInTerminal(
            [
                CommandRunner.builtBinary("reservations").path, "new", "--store",
                "berlin-kurfuerstendamm", "--customer", known.id.uuidString,
            ],
            environment: station.environment,
            answers: [
                ("Start", ["sunday 12:00", "tomorrow 7:30", "tomorrow 12:00"]), ("Party", [""]),
                ("Topic", ["Hemming"]), ("Book it", ["y"]),
            ]
        )
        #expect(again == 0, "\(screen)")
        #expect(screen.contains("closed on Sundays"), "\(screen)")
        #expect(screen.contains("open 09:00-20:00 that day"), "\(screen)")
        #expect(screen.contains("Europe/Berlin time: Mon–Sat 09:00-20:00, Sun closed"), "\(screen)")
        let noInput = try await station.run([
            "new", "--store", "berlin-kurfuerstendamm", "--customer", known.id.uuidString,
            "--start", "sunday 12:00", "--topic", "x", "--no-input",
        ])
        #expect(noInput.status == 64)
        #expect(noInput.stderr.contains("closed on Sundays"), "\(noInput.stderr)")

        // A move outside the hours is refused by the server, in words.
        let moved = try await station.run([
            "reschedule", made.reservation.confirmationCode.description, "--start",
            "sunday 12:00",
        ])
        #expect(moved.status == 64, "\(moved.stderr)")
        #expect(moved.stderr.contains("was not moved"), "\(moved.stderr)")
        #expect(moved.stderr.contains("closed on Sundays"), "\(moved.stderr)")
        #expect(moved.stderr.contains("Europe/Berlin time"), "\(moved.stderr)")
    }

    @Test("Tables fit the terminal, omit what the query fixes; the next page is a ready command")
    func reading() async throws {
        let server = try await StoreServerProcess.scratch("counter-read")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let store = DemoStores.berlin.uuidString
        let (status, screen) = try await runInTerminal(
            [
                CommandRunner.builtBinary("reservations").path, "list", "--date", "today",
                "--store", store, "--limit", "3",
            ],
            environment: station.environment,
            answers: [],
            columns: 60
        )
        #expect(status == 0, "\(screen)")
        let lines = screen.replacingOccurrences(of: "\r", with: "").split(separator: "\n")
        let table = lines.filter { !$0.hasPrefix("next page:") && !$0.hasPrefix("notice") }
        #expect(table.allSatisfy { DisplayWidth.of($0) <= 60 }, "\(screen)")
        #expect(table.first?.contains("STORE") == false, "\(screen)")
        // The code and the time stay whole; text columns give way (`CUST…`).
        #expect(table.first?.contains("WHEN (store time)") == true, "\(screen)")
        #expect(table.first?.contains("CUST") == true, "\(screen)")
        #expect(
            table.dropFirst().allSatisfy {
                $0.split(separator: " ").first.map { (try? ConfirmationCode(String($0))) != nil }
                    ?? false
            },
            "\(screen)"
        )
        let next = try #require(lines.first { $0.hasPrefix("next page: ") }, "\(screen)")
        #expect(next.contains("--cursor"))
        // The printed command runs as it is (here with --json, which a shell would add).
        var words = next.dropFirst("next page: ".count).split(separator: " ").map(String.init)
        words.removeFirst()
        let again = try await station.run(
            words.map { $0.replacingOccurrences(of: "'", with: "") } + ["--json"]
        )
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try decode(Page<ReservationDetail>.self, again).items.count <= 3)
    }

    @Test("The customer form's table has a header over every column, each in line")
    func formTable() async throws {
        let server = try await StoreServerProcess.scratch("counter-form")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let (status, screen) = try await runInTerminal(
            [CommandRunner.builtBinary("reservations").path, "config"],
            environment: station.environment,
            answers: [],
            columns: 80
        )
        #expect(status == 0, "\(screen)")
        let lines = screen.replacingOccurrences(of: "\r", with: "").split(separator: "\n")
        let header = try #require(lines.first { $0.hasPrefix("FIELD ") }, "\(screen)")
        let row = try #require(lines.first { $0.hasPrefix("givenName ") }, "\(screen)")
        // Each header word starts where its column starts in the rows.
        for (word, value) in [("LABEL", "First name"), ("REQUIRED", "yes"), ("KIND", "text")] {
            let column = try #require(header.range(of: word), "\(screen)").lowerBound
            let offset = header.distance(from: header.startIndex, to: column)
            let cell = row.dropFirst(offset)
            #expect(cell.hasPrefix(value), "\(word) over '\(cell)': \(screen)")
        }
    }

    @Test("A phone typed in national form finds the customer stored in international form")
    func nationalPhone() async throws {
        let server = try await StoreServerProcess.scratch("counter-phone")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let listed = try await station.run([
            "search", "a", "--store", DemoStores.berlin.uuidString, "--limit", "200", "--json",
        ])
        let page = try decode(Page<ReservationDetail>.self, listed)
        let customer = try #require(
            page.items.map(\.customer).first { $0.phone?.e164.hasPrefix("+4930") == true }
        )
        let national = "0" + customer.phone!.e164.dropFirst(3)
        let spaced = national.prefix(3) + " " + national.dropFirst(3)
        let found = try await station.run(["search", String(spaced), "--json"])
        #expect(found.status == 0, "\(found.stderr)")
        #expect(
            try decode(Page<ReservationDetail>.self, found).items.contains {
                $0.customer.id == customer.id
            },
            "no result for \(spaced)"
        )
    }
}
