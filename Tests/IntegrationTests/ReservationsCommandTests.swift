import ChildProcesses
import Foundation
import Models
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One user's machine: a throwaway SHOPFLOOR_HOME the `reservations` processes share.
struct Workstation {
    let home: URL

    init() throws {
        home = try CommandRunner.temporaryDirectory(prefix: "reservations-home")
        chmod(home.path, 0o700)
    }

    var environment: [String: String] {
        var environment = FixedClock.applied(to: ProcessInfo.processInfo.environment)
        environment.removeValue(forKey: "SHOPFLOOR_SERVER")
        environment.removeValue(forKey: "SHOPFLOOR_SUITE")
        environment["SHOPFLOOR_HOME"] = home.path
        environment["NO_COLOR"] = "1"
        return environment
    }

    /// Runs `reservations` with this home; returns the run and its wall time in seconds.
    @discardableResult
    func run(_ arguments: [String], stdin: Data? = nil) async throws -> ProcessOutcome {
        try await CommandRunner.run(
            CommandRunner.builtBinary("reservations"),
            arguments,
            environment: environment,
            stdin: stdin
        )
    }

    /// Runs `reservations` (or `app`) inside a shell that clocks the process itself, killing
    /// it after `timeout` seconds: the outcome's ``ProcessOutcome/seconds`` are from its exec
    /// to its exit, free of the time this test process took to start it and to notice the
    /// exit (a loaded machine can starve the test's concurrency pool for many seconds; on a
    /// new machine twice as slow, deadline checks of 3 s measured 3.0-3.3 s so). A process
    /// killed before it ended keeps the runner's seconds (and `byItself` is false).
    func clocked(
        _ arguments: [String],
        app: String = "reservations",
        stdin: Data? = nil,
        timeout: Double = 300
    ) async throws -> (outcome: ProcessOutcome, byItself: Bool) {
        let script = """
            start=$EPOCHREALTIME; "$@"; status=$?
            printf '\\nshopfloor-test-elapsed %s %s\\n' "$start" "$EPOCHREALTIME" >&2
            exit $status
            """
        var run = try await CommandRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", script, "bash", CommandRunner.builtBinary(app).path] + arguments,
            environment: environment,
            stdin: stdin,
            timeout: timeout
        )
        let text = run.stderr
        guard let marker = text.range(of: "\nshopfloor-test-elapsed ", options: .backwards)
        else { return (run, false) }
        let times = text[marker.upperBound...].split(whereSeparator: \.isWhitespace)
            .compactMap { Double($0) }
        guard times.count == 2 else { return (run, false) }
        run.stderrData = Data(text[..<marker.lowerBound].utf8)
        run.seconds = times[1] - times[0]
        return (run, true)
    }

    /// ``clocked(_:app:stdin:timeout:)``, and its seconds; throws when the shell could not
    /// clock the process.
    func selfTimed(_ arguments: [String], app: String = "reservations", stdin: Data? = nil)
        async throws -> (ProcessOutcome, Double)
    {
        let (run, byItself) = try await clocked(arguments, app: app, stdin: stdin)
        guard byItself else { throw SelfTimingMissing(stderr: run.stderr) }
        return (run, run.seconds)
    }

    struct SelfTimingMissing: Error { let stderr: String }

    /// Runs a command whose connect timeout decides how long it takes (a dead network),
    /// clocked by itself, then the same command with a connect timeout of 0.05 s: how long
    /// its own work (start-up, reading kept data, its answer) takes this machine at that
    /// moment. Idle, the commands took 2.07-2.10 s on a 2 s connect timeout (catalog and
    /// reservations, debug builds); in a fresh clone's `make test` on a machine twice as slow
    /// as the last one, 3.0-3.4 s, and strace put the rest in start-up (1.2 s instead of
    /// 60 ms) and a search through the kept data (1.1 s), not in waiting (2026-12-07).
    func againstOwnWork(
        _ arguments: [String],
        app: String = "reservations",
        stdin: Data? = nil,
        timeout: Double = 60
    ) async throws -> DeadlineRun {
        let (run, _) = try await clocked(arguments, app: app, stdin: stdin, timeout: timeout)
        let (control, _) = try await clocked(
            arguments + ["--connect-timeout", "0.05"],
            app: app,
            stdin: stdin,
            timeout: timeout
        )
        return DeadlineRun(outcome: run, ownWork: max(0, control.seconds - 0.05))
    }

    /// Signs in as `user` (the demo associate, of the Berlin store, unless told otherwise).
    func login(_ server: StoreServerProcess, user: String = "demo") async throws {
        let run = try await SharedServer.signingIn(to: server) {
            try await self.run(
                ["login", "--server", server.url, "--user", user, "--password-stdin"],
                stdin: Data("shopfloor-demo\n".utf8)
            )
        }
        #expect(run.status == 0, "login: \(run.stderr)")
    }

    func remove() { try? FileManager.default.removeItem(at: home) }
}

func decode<T: Decodable>(_ type: T.Type, _ run: ProcessOutcome) throws -> T {
    do {
        return try ModelsJSON.makeDecoder().decode(type, from: Data(run.stdout.utf8))
    } catch {
        Issue.record("stdout is not \(type): \(run.stdout.prefix(500)) / stderr: \(run.stderr)")
        throw error
    }
}

/// A confirmed reservation of the demo data at a store other than `excluding` (whose flags
/// turn actions off), starting tomorrow or later so a check-in is the first.
func confirmedReservation(
    _ station: Workstation,
    query: String = "a",
    store: String? = nil
) async throws -> ReservationDetail {
    var arguments = ["search", query, "--status", "confirmed", "--limit", "200", "--json"]
    if let store { arguments += ["--store", store] }
    let run = try await station.run(arguments)
    #expect(run.status == 0, "search: \(run.stderr)")
    let page = try decode(Page<ReservationDetail>.self, run)
    let usable = page.items.filter {
        ![DemoStores.perth, DemoStores.sydney].contains($0.reservation.storeID)
            || store != nil
    }
    return try #require(usable.first, "no confirmed reservation in the demo data")
}

enum KnownFlags {
    static let checkIn = "checkInEnabled"
}

enum DemoStores {
    static let chicago = UUID(uuidString: "5D0F1C2A-0002-4A00-8000-000000000002")!
    static let berlin = UUID(uuidString: "5D0F1C2A-0004-4A00-8000-000000000004")!
    static let sydney = UUID(uuidString: "5D0F1C2A-0005-4A00-8000-000000000005")!
    static let perth = UUID(uuidString: "5D0F1C2A-0006-4A00-8000-000000000006")!
}

/// A server shared by the tests that do not stop or reconfigure it, started by the first
/// test that asks; killed with the test process (ChildProcesses kills every child still
/// running then), its files removed.
enum SharedServer {
    static let directory: URL = {
        let directory = try! CommandRunner.temporaryDirectory(prefix: "reservations-server")
        atexit { try? FileManager.default.removeItem(at: SharedServer.directory) }
        return directory
    }()

    private static let server = Task<StoreServerProcess, any Error> {
        try await StoreServerProcess(database: directory.appendingPathComponent("store.sqlite"))
    }

    static func get() async throws -> StoreServerProcess {
        do {
            let shared = try await server.value
            started.withLock { $0 = shared }
            return shared
        } catch {
            Issue.record("store-server could not be started (see \(directory.path)): \(error)")
            throw error
        }
    }

    /// Runs `body`, a sign-in to `server`, holding one of two permits when `server` is the
    /// shared one. It hashes at most two sign-ins of one user at once (`signInHashing`) and
    /// answers a third 429, "try again in 1 second"; the catalog, reservations and terminal
    /// suites sign in there as demo side by side, each one test at a time, and three at once
    /// failed a fresh clone's `make test` (2026-12-07).
    static func signingIn<T: Sendable>(
        to server: StoreServerProcess,
        _ body: () async throws -> T
    ) async throws -> T {
        // Compared with the server `get()` handed out: awaiting `server` here would start
        // the shared server for a test that only signs in to one of its own.
        guard started.withLock({ $0 }) === server else { return try await body() }
        await signIns.take()
        defer { signIns.give() }
        return try await body()
    }

    private static let signIns = Permits(2)
    /// The shared server, once `get()` has started it.
    private static let started = Mutex<StoreServerProcess?>(nil)
}

/// A count of permits that tasks wait for in turn (StoreServer's `WriteGate` is the same with
/// one permit, inside the server).
final class Permits: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    init(_ count: Int) { state = Mutex(State(free: count)) }

    /// Takes a permit, waiting for one to be given back when none is free.
    func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let taken = state.withLock { state in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if taken { continuation.resume() }
        }
    }

    /// Gives a permit back, to the longest waiting task if there is one.
    func give() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// One test at a time: six tests sign in to `SharedServer` (five as demo), which takes at most
/// two sign-ins of one user and four from one address at once (`signInHashing`) and counts
/// failures per user name and address (every test's is 127.0.0.1; `sessionShared` adds one on
/// purpose). `offline` and `deadNetwork` time commands to bounds of 3 s and less (`seconds < 3`).
@Suite("reservations against a real store-server", .serialized)
struct ReservationsCommandTests {
    @Test("--help documents every command and the exit codes")
    func help() async throws {
        let station = try Workstation()
        defer { station.remove() }
        let run = try await station.run(["--help"])
        #expect(run.status == 0)
        for text in [
            "login", "check-in", "reschedule", "show", "new", "config",
            "5    update required", "6    offline", "77   sign-in required", "64   usage",
        ] {
            #expect(run.stdout.contains(text), "--help lacks \(text)")
        }
    }

    @Test("Signing in once serves every later process, and signing out ends it for all")
    func sessionShared() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        #expect(try await station.run(["whoami"]).status == 77)

        let refused = try await SharedServer.signingIn(to: server) {
            try await station.run(
                ["login", "--server", server.url, "--user", "demo", "--password-stdin"],
                stdin: Data("wrong\n".utf8)
            )
        }
        #expect(refused.status == 77)
        #expect(refused.stderr.contains("sign-in refused"))

        try await station.login(server)
        // Another process, no --server: the stored URL and session are used.
        let whoami = try await station.run(["whoami", "--json"])
        #expect(whoami.status == 0, "\(whoami.stderr)")
        let associate = try decode(Associate.self, whoami)
        #expect(associate.username == "demo")
        // Another app of the suite sees the stored server URL in the shared settings.
        let settings = try await CommandRunner.run(
            CommandRunner.builtBinary("suite-defaults"),
            ["read", "serverURL"],
            environment: station.environment
        )
        #expect(settings.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == server.url)
        // Another client app is signed in by the same login.
        let catalogWhoami = try await CommandRunner.run(
            CommandRunner.builtBinary("catalog"),
            ["whoami", "--json"],
            environment: station.environment
        )
        #expect(catalogWhoami.status == 0, "\(catalogWhoami.stderr)")
        #expect(try decode(Associate.self, catalogWhoami).username == "demo")
        let tokenFile = station.home.appendingPathComponent("shopfloor/auth-token.json").path
        let mode = try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions]
        #expect(mode as? Int == 0o600)

        // The session is never sent to another server.
        let elsewhere = try await station.run(["whoami", "--server", "http://127.0.0.1:9"])
        #expect(elsewhere.status == 77)
        #expect(elsewhere.stderr.contains("signed in to \(server.url)"))

        // Signing out with --server elsewhere revokes the session where it was issued.
        let logout = try await station.run(["logout", "--server", "http://127.0.0.1:9"])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(logout.stderr.contains("signed out of \(server.url)"), "\(logout.stderr)")
        #expect(!FileManager.default.fileExists(atPath: tokenFile))
        let after = try await station.run(["show", "41SJ-3EQ4"])
        #expect(after.status == 77)
        #expect(after.stderr.contains("login"))
        let catalogAfter = try await CommandRunner.run(
            CommandRunner.builtBinary("catalog"),
            ["whoami"],
            environment: station.environment
        )
        #expect(catalogAfter.status == 77, "\(catalogAfter.stderr)")
    }

    @Test("Search, show by code and id, and a check-in made twice applies once")
    func searchShowCheckIn() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let found = try await confirmedReservation(station, query: "e")
        let code = found.reservation.confirmationCode.description

        let byCode = try await station.run([
            "show", code.lowercased().replacingOccurrences(of: "-", with: ""), "--json",
        ])
        #expect(byCode.status == 0, "\(byCode.stderr)")
        let shown = try decode(ReservationDetail.self, byCode)
        #expect(shown == found)
        #expect(byCode.stdout.contains("\"customer\":{"))
        let byID = try await station.run(["show", found.id.uuidString, "--json"])
        #expect(try decode(ReservationDetail.self, byID) == found)

        let first = try await station.run(["check-in", code, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let checkedIn = try decode(ReservationDetail.self, first)
        #expect(checkedIn.reservation.status == .checkedIn)
        #expect(checkedIn.reservation.version == found.reservation.version + 1)
        #expect(first.stderr.contains("checked in \(code)"))

        let second = try await station.run(["check-in", code, "--json"])
        #expect(second.status == 0)
        #expect(second.stderr.contains("already checked in"))
        let byIDAgain = try await station.run(["check-in", found.id.uuidString, "--json"])
        #expect(byIDAgain.status == 0)
        #expect(byIDAgain.stderr.contains("already checked in"))

        let final = try decode(
            ReservationDetail.self,
            try await station.run(["show", code, "--json"])
        )
        #expect(final.reservation.status == .checkedIn)
        #expect(final.reservation.version == found.reservation.version + 1)

        let missing = try await station.run(["show", "0000-0000"])
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("no reservation 0000-0000"))
        let bad = try await station.run(["show", "not-a-code"])
        #expect(bad.status == 64)
    }

    @Test("A flag that turns check-in off for a store stops the check-in with exit 1")
    func checkInDisabledByFlag() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        // The demo associate sees Berlin only; the administrator sees Perth.
        try await station.login(server, user: "demo-admin")
        let perth = try await confirmedReservation(
            station,
            query: "e",
            store: DemoStores.perth.uuidString
        )
        let run = try await station.run([
            "check-in", perth.reservation.confirmationCode.description,
        ])
        #expect(run.status == 1)
        #expect(run.stderr.contains("check-in is turned off for Perth Hay Street"))
        let byID = try await station.run(["check-in", perth.id.uuidString])
        #expect(byID.status == 1)
        #expect(byID.stderr.contains("checkInEnabled"))
        let after = try decode(
            ReservationDetail.self,
            try await station.run(["show", perth.id.uuidString, "--json"])
        )
        #expect(after.reservation.status == .confirmed)
    }

    @Test("new books with valid fields and refuses invalid ones, listing each problem")
    func newReservation() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        // Saturday noon in Berlin, by the fixed clock: within the store's opening hours.
        let start = RFC3339.string(from: CounterTests.berlinTime(days: 3, hour: 12))
        let common = [
            "new", "--store", DemoStores.berlin.uuidString, "--start", start, "--topic",
            "Suit fitting", "--party-size", "2",
        ]
        let good = try await station.run(
            common + [
                "--field", "givenName=Zelda", "--field", "familyName=Quux", "--field",
                "email=zelda@example.com", "--no-input", "--json",
            ]
        )
        #expect(good.status == 0, "\(good.stderr)")
        let created = try decode(ReservationDetail.self, good)
        #expect(created.customer.familyName == "Quux")
        #expect(created.customer.email?.value == "zelda@example.com")
        // Berlin (market DE) has 45-minute slots.
        #expect(created.reservation.duration == 45 * 60)
        #expect(good.stderr.contains("booked \(created.reservation.confirmationCode)"))

        let bad = try await station.run(
            common + [
                "--field", "givenName=Yara", "--field", "email=not-an-email", "--field",
                "shoeSize=44", "--no-input",
            ]
        )
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("shoeSize"))
        let missing = try await station.run(
            common + ["--field", "givenName=Yara", "--field", "email=not-an-email", "--no-input"]
        )
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("familyName: Last name is required"))
        #expect(missing.stderr.contains("email: E-mail is not an e-mail address"))
        let none = try await station.run(["search", "Yara", "--json"])
        #expect(try decode(Page<ReservationDetail>.self, none).items.isEmpty)

        // Answers on stdin, a wrong one asked again.
        let asked = try await station.run(
            common + ["--json"],
            stdin: Data("Xenia\nVoss\nxenia@\nxenia@example.com\n\n\ny\n".utf8)
        )
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stderr.contains("E-mail is not an e-mail address"))
        #expect(
            try decode(ReservationDetail.self, asked).customer.email?.value == "xenia@example.com"
        )

        let party = try await station.run(
            common.map { $0 == "2" ? "5" : $0 } + [
                "--field", "givenName=A", "--field", "familyName=B", "--no-input",
            ]
        )
        #expect(party.status == 64)
        #expect(party.stderr.contains("limit of 4"))

        let chicago = try await station.run(
            [
                "new", "--store", DemoStores.chicago.uuidString, "--start", start, "--topic", "x",
                "--field", "givenName=A", "--field", "familyName=B", "--no-input",
            ]
        )
        #expect(chicago.status == 1)
        #expect(chicago.stderr.contains("new reservations are turned off"))
    }

    @Test("show --from-image finds the reservation of a pass QR made with qrencode")
    func showFromImage() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let found = try await confirmedReservation(station, query: "o")
        let code = found.reservation.confirmationCode
        for payload in [code.passPayload, code.description] {
            let image = station.home.appendingPathComponent("pass-\(payload.count).png")
            let encode = try await CommandRunner.run(
                URL(fileURLWithPath: "/usr/bin/qrencode"),
                ["-o", image.path, "-s", "6", payload]
            )
            #expect(encode.status == 0, "qrencode: \(encode.stderr)")
            let run = try await station.run(["show", "--from-image", image.path, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try decode(ReservationDetail.self, run).id == found.id)
        }
        let other = station.home.appendingPathComponent("other.png")
        _ = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/qrencode"),
            ["-o", other.path, "https://example.com"]
        )
        let wrong = try await station.run(["show", "--from-image", other.path])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("no reservation code in the image"))
        let absent = try await station.run(["show", "--from-image", "/nonexistent.png"])
        #expect(absent.status == 1)
    }

    @Test("reschedule with a stale version is a conflict that changes nothing")
    func rescheduleConflict() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let found = try await confirmedReservation(station, query: "i")
        let code = found.reservation.confirmationCode.description
        let newStart = RFC3339.string(from: found.reservation.startsAt.addingTimeInterval(3_600))
        let moved = try await station.run(["reschedule", code, "--start", newStart, "--json"])
        #expect(moved.status == 0, "\(moved.stderr)")
        let after = try decode(ReservationDetail.self, moved)
        #expect(after.reservation.startsAt == found.reservation.startsAt.addingTimeInterval(3_600))
        #expect(after.reservation.duration == found.reservation.duration)

        let stale = try await station.run(
            [
                "reschedule", code, "--start", RFC3339.string(from: found.reservation.startsAt),
                "--if-version", String(found.reservation.version),
            ]
        )
        #expect(stale.status == 1)
        #expect(stale.stderr.contains("changed by someone else"))
        #expect(stale.stderr.contains("version \(found.reservation.version)"))
        let final = try decode(
            ReservationDetail.self,
            try await station.run(["show", code, "--json"])
        )
        #expect(final.reservation.startsAt == after.reservation.startsAt)
    }

    @Test("A forced update stops every command but logout with exit 5, online and offline")
    func forcedUpdate() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "reservations-update")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await StoreServerProcess(
            database: directory.appendingPathComponent("s.sqlite")
        )
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let found = try await confirmedReservation(station)
        let set = try await server.admin([
            "config", "set-minimum-version", "reservations", "99.0.0",
        ])
        #expect(set.status == 0, "\(set.stderr)")
        for arguments in [
            ["show", found.reservation.confirmationCode.description],
            ["list"], ["search", "a"], ["check-in", found.id.uuidString], ["config"], ["whoami"],
        ] {
            let run = try await station.run(arguments)
            #expect(run.status == 5, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("update required"))
            #expect(run.stderr.contains("99.0.0"))
        }
        let unchanged = try await server.admin(["config", "show"])
        #expect(unchanged.stdout.contains("99.0.0"))
        await server.stop()
        let offline = try await station.run(["show", found.id.uuidString])
        #expect(offline.status == 5, "kept configuration: \(offline.stderr)")
        // The session is never sent to another server.
        let elsewhere = try await station.run(["whoami", "--server", "http://127.0.0.1:9"])
        #expect(elsewhere.status == 77)
        #expect(elsewhere.stderr.contains("signed in to \(server.url)"))

        let logout = try await station.run(["logout"])
        #expect(logout.status == 0, "\(logout.stderr)")
    }

    @Test(
        "Offline, reads answer from kept data with its age; without it they fail fast with exit 6"
    )
    func offline() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "reservations-offline")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await StoreServerProcess(
            database: directory.appendingPathComponent("s.sqlite")
        )
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let listed = try await station.run(
            ["list", "--date", "today", "--store", DemoStores.berlin.uuidString, "--json"]
        )
        #expect(listed.status == 0, "\(listed.stderr)")
        let today = try decode(Page<ReservationDetail>.self, listed)
        let one = try #require(today.items.first)
        let other = try await confirmedReservation(station, query: "u")
        // Shown by code, then checked in: offline, the code shows the check-in's answer,
        // not the copy the lookup kept before it.
        let otherCode = other.reservation.confirmationCode.description
        #expect(try await station.run(["show", otherCode]).status == 0)
        let checkIn = try await station.run(["check-in", otherCode])
        #expect(checkIn.status == 0, "\(checkIn.stderr)")
        await server.stop()
        let keptCheckIn = try await station.run(["show", otherCode, "--json"])
        #expect(keptCheckIn.status == 0, "\(keptCheckIn.stderr)")
        #expect(try decode(ReservationDetail.self, keptCheckIn).reservation.status == .checkedIn)

        let (shown, seconds) = try await station.selfTimed(
            ["show", one.reservation.confirmationCode.description, "--json"]
        )
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(try decode(ReservationDetail.self, shown) == one)
        #expect(shown.stderr.contains("offline"))
        #expect(shown.stderr.contains("saved"))
        #expect(seconds < 3)
        let again = try await station.run(
            ["list", "--date", "today", "--store", DemoStores.berlin.uuidString, "--json"]
        )
        #expect(again.status == 0)
        #expect(try decode(Page<ReservationDetail>.self, again).items == today.items)
        let search = try await station.run(["search", one.customer.familyName, "--json"])
        #expect(search.status == 0, "\(search.stderr)")
        #expect(try decode(Page<ReservationDetail>.self, search).items.contains { $0.id == one.id })
        // Each says what it is, in words and in the JSON's `offline` field: the same query's
        // saved answer, or a partial list from kept data (this search was never saved).
        struct Offline: Decodable {
            struct Fact: Decodable {
                var kind: String
                var count: Int?
                var savedAt: Date?
            }
            var offline: Fact?
        }
        let saved = try decode(Offline.self, again).offline
        #expect(saved?.kind == "saved" && saved?.savedAt != nil)
        let partial = try decode(Offline.self, search).offline
        #expect(partial?.kind == "partial", "\(search.stdout)")
        #expect((partial?.count ?? 0) >= 1)
        #expect(search.stderr.contains("PARTIAL list"), "\(search.stderr)")
        #expect(!again.stderr.contains("PARTIAL"), "\(again.stderr)")
        #expect(try await station.run(["show", other.id.uuidString]).status == 0)

        let (unknown, unknownSeconds) = try await station.selfTimed(["show", "0000-0000"])
        #expect(unknown.status == 6)
        #expect(unknown.stderr.contains("cannot be reached"))
        #expect(unknownSeconds < 3)
        let write = try await station.run(["check-in", one.id.uuidString])
        #expect(write.status == 6)
        #expect(write.stderr.contains("not sent"))

        let fresh = try Workstation()
        defer { fresh.remove() }
        let (never, neverSeconds) = try await fresh.selfTimed(["list", "--server", server.url])
        #expect(never.status == 6 || never.status == 77, "\(never.stderr)")
        #expect(neverSeconds < 3)
    }

    @Test("On a network that drops every packet, commands end within the connect timeout + 1 s")
    func deadNetwork() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "reservations-dead")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await StoreServerProcess(
            database: directory.appendingPathComponent("s.sqlite")
        )
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let found = try await confirmedReservation(station)
        let port = server.port
        await server.stop()
        // The same address now answers no SYN: a full accept queue drops them.
        let blackHole = try await BlackHole(port: port)
        defer { blackHole.close() }
        // Each against its own work at that moment (``Workstation/againstOwnWork``).
        let kept = try await station.againstOwnWork(["show", found.id.uuidString, "--json"])
        #expect(kept.outcome.status == 0, "\(kept.outcome.stderr)")
        #expect(kept.outcome.stderr.contains("no answer within 2 s"))
        #expect(kept.seconds >= 1.9 && kept.endedWithin(2), "\(kept.account)")
        let none = try await station.againstOwnWork(["show", "0000-0000"])
        #expect(none.outcome.status == 6)
        #expect(none.endedWithin(2), "\(none.account)")
        let (short, shortSeconds) = try await station.selfTimed(
            ["show", "0000-0000", "--connect-timeout", "0.5"]
        )
        #expect(short.status == 6)
        #expect(shortSeconds < 1.5, "took \(shortSeconds) s")
        // (Its own work measured after it: signing out of a home already signed out.)
        let logout = try await station.againstOwnWork(["logout"])
        #expect(logout.outcome.status == 0)
        #expect(logout.outcome.stderr.contains("could not be told"))
        #expect(logout.endedWithin(2), "\(logout.account)")
    }

    @Test(
        "The configuration is revalidated with its ETag (304), and a change on the server applies"
    )
    func configurationRevalidated() async throws {
        let server = try await StoreServerProcess.scratch("reservations-etag")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let berlin = DemoStores.berlin.uuidString
        /// The `config` command's flags for Berlin.
        func flags() async throws -> [String: FlagValue] {
            let run = try await station.run(["config", "--store", berlin, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            return try decode(ClientConfigurationResponse.self, run).flags
        }
        /// The statuses the server logged for Berlin's configuration, once `count` are there.
        func configStatuses(count: Int) async -> [String] {
            var statuses: [String] = []
            let end = Date(timeIntervalSinceNow: 10)
            repeat {
                let log = (try? String(contentsOf: server.log, encoding: .utf8)) ?? ""
                statuses = log.split(whereSeparator: \.isNewline)
                    .filter { $0.contains("path: /v1/config/client,") }
                    .compactMap { line in
                        line.range(of: "status: ").map { String(line[$0.upperBound...].prefix(3)) }
                    }
                if statuses.count >= count { break }
                try? await Task.sleep(for: .milliseconds(50))  // the server logs after it answers
            } while Date() < end
            return statuses
        }
        #expect(try await flags()[KnownFlags.checkIn] == .bool(true))
        let before = await configStatuses(count: 2)
        #expect(try await flags()[KnownFlags.checkIn] == .bool(true))
        let after = await configStatuses(count: before.count + 1)
        #expect(after.count == before.count + 1)
        #expect(after.last == "304", "the kept copy was not revalidated: \(after)")

        let set = try await server.admin([
            "config", "set-flag", KnownFlags.checkIn, "false", "--store", berlin,
        ])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try await flags()[KnownFlags.checkIn] == .bool(false))
        #expect(await configStatuses(count: after.count + 1).last == "200")
        let found = try await confirmedReservation(station, query: "e", store: berlin)
        let checkIn = try await station.run([
            "check-in", found.reservation.confirmationCode.description,
        ])
        #expect(checkIn.status == 1)
        #expect(checkIn.stderr.contains("check-in is turned off"), "\(checkIn.stderr)")
    }

    @Test("After a server restart on the same database the session and data carry on")
    func serverRestart() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "reservations-restart")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("s.sqlite")
        var server = try await StoreServerProcess(database: database)
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let found = try await confirmedReservation(station)
        let port = server.port
        await server.stop()
        server = try await StoreServerProcess(database: database, port: port)
        let shown = try await station.run(["show", found.id.uuidString, "--json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(!shown.stderr.contains("offline"))
        let checkIn = try await station.run([
            "check-in", found.reservation.confirmationCode.description, "--json",
        ])
        #expect(checkIn.status == 0, "\(checkIn.stderr)")
        #expect(try decode(ReservationDetail.self, checkIn).reservation.status == .checkedIn)
        await server.stop()
    }
}

/// A listening socket on a given port whose accept queue is full, so connection attempts
/// get no answer (as on a network that drops every packet).
final class BlackHole {
    private var fds: [Int32] = []

    init(port: Int) async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(bound == 0, "cannot bind port \(port)")
        try #require(listen(listener, 0) == 0)
        fds.append(listener)
        for _ in 0..<4 {
            let client = socket(
                AF_INET,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                0
            )
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            fds.append(client)
        }
        try await Task.sleep(for: .milliseconds(200))
    }

    func close() {
        for fd in fds { Glibc.close(fd) }
        fds = []
    }
}

/// `reservations login` on a pseudo-terminal, as a person at a terminal runs it.
///
/// One test at a time: `passwordWithoutEcho` and `terminalOutput` sign in as demo to
/// `SharedServer`, which takes at most two sign-ins of one user at once (`signInHashing`) and
/// counts failures per user name and address (every test's is 127.0.0.1); the catalog and
/// reservations suites sign in there too, each sign-in holding a `SharedServer.signingIn`
/// permit.
@Suite("reservations login at a terminal", .serialized)
struct TerminalLoginTests {
    @Test(
        "The password is asked without echo, and a SIGINT at the prompt exits 130 with echo back on"
    )
    func passwordWithoutEcho() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        let arguments = ["login", "--server", server.url, "--user", "demo"]
        let reservations = CommandRunner.builtBinary("reservations")

        var terminal = try PseudoTerminal()
        var process = try await terminal.start(
            reservations,
            arguments,
            environment: station.environment
        )
        var prompt = await terminal.read(until: "password for demo")
        #expect(prompt.contains("password for demo"))
        #expect(!terminal.echoes, "echo is on at the password prompt")
        let (rest, outcome) = try await SharedServer.signingIn(to: server) { [terminal, process] in
            terminal.type("shopfloor-demo\n")
            return (await terminal.read(until: "signed in as demo"), await process.wait())
        }
        #expect(outcome.status == 0, "\(rest)")
        #expect(!rest.contains("shopfloor-demo"), "the password was echoed: \(rest)")
        #expect(terminal.echoes, "echo stayed off")
        terminal.close()

        terminal = try PseudoTerminal()
        defer { terminal.close() }
        process = try await terminal.start(
            reservations,
            arguments,
            environment: station.environment
        )
        prompt = await terminal.read(until: "password for demo")
        #expect(prompt.contains("password for demo"))
        #expect(await process.stop(with: SIGINT).outcome.status == 130)
        #expect(terminal.echoes, "echo stayed off after SIGINT")
    }
}

extension TerminalLoginTests {
    @Test(
        "On a terminal show and list print for people: store time, colour unless NO_COLOR is set"
    )
    func terminalOutput() async throws {
        let server = try await SharedServer.get()
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let detail = try await confirmedReservation(station, store: DemoStores.berlin.uuidString)
        let code = detail.reservation.confirmationCode.description
        // The expected wall-clock times, in Berlin whatever this machine's zone is.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let zone: TimeZone? = TimeZone(identifier: detail.store.timeZone)
        try #require(zone != nil, "unknown time zone \(detail.store.timeZone)")
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        let start = formatter.string(from: detail.reservation.startsAt)
        formatter.dateFormat = "HH:mm"
        let span = "\(start)–\(formatter.string(from: detail.reservation.endsAt))"
        let day = String(start.prefix(10))

        var colour = station.environment
        colour.removeValue(forKey: "NO_COLOR")
        colour["TERM"] = "xterm-256color"
        let reservations = CommandRunner.builtBinary("reservations")
        for (environment, coloured) in [(colour, true), (station.environment, false)] {
            var terminal = try PseudoTerminal()
            var process = try await terminal.start(
                reservations,
                ["show", code],
                environment: environment
            )
            var (text, outcome) = await terminal.readAll(of: process)
            terminal.close()
            #expect(outcome.status == 0, "\(text)")
            #expect(!text.hasPrefix("{"), "JSON on a terminal: \(text)")
            #expect(text.contains("\(span) \(detail.store.timeZone)"), "\(text)")
            #expect(text.contains("\u{1B}[32mconfirmed\u{1B}[0m") == coloured, "\(text)")
            #expect(text.contains("\u{1B}[") == coloured, "\(text)")

            terminal = try PseudoTerminal()
            process = try await terminal.start(
                reservations,
                ["list", "--date", day, "--store", DemoStores.berlin.uuidString, "--limit", "200"],
                environment: environment
            )
            (text, outcome) = await terminal.readAll(of: process)
            terminal.close()
            #expect(outcome.status == 0, "\(text)")
            #expect(text.contains("WHEN (store time)"), "\(text)")
            // A terminal ends lines with "\r\n", one Character in Swift.
            let row = text.split(whereSeparator: \.isNewline).first { $0.hasPrefix(code) }
            #expect(row?.contains(span) == true, "no row for \(code) at \(span): \(text)")
            #expect(text.contains("\u{1B}[") == coloured, "\(text)")
        }
        // Not a terminal: JSON, never colour, even without NO_COLOR.
        let piped = try await CommandRunner.run(
            CommandRunner.builtBinary("reservations"),
            ["show", code],
            environment: colour
        )
        #expect(piped.status == 0)
        #expect(!piped.stdout.contains("\u{1B}["))
        #expect(try decode(ReservationDetail.self, piped).reservation.id == detail.reservation.id)
    }
}

extension TerminalLoginTests {
    @Test("store-server user add at a terminal asks for the password with echo off")
    func storeServerPasswordPrompt() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "admin-tty")
        defer { try? FileManager.default.removeItem(at: directory) }
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let process = try await terminal.start(
            CommandRunner.builtBinary("store-server"),
            [
                "user", "add", "carol", "--database",
                directory.appendingPathComponent("s.sqlite").path,
                "--insecure-password-cost-for-tests", "--password-cost", "1000",
            ],
            environment: ProcessInfo.processInfo.environment
        )
        let prompt = await terminal.read(until: "password for carol")
        #expect(prompt.contains("password for carol: "), "\(prompt)")
        #expect(!terminal.echoes, "echo is on at the password prompt")
        terminal.type("carol-secret-1\n")
        let (rest, outcome) = await terminal.readAll(of: process)
        #expect(outcome.status == 0, "\(rest)")
        #expect(rest.contains("added associate carol"), "\(rest)")
        #expect(!rest.contains("carol-secret-1"), "the password was echoed: \(rest)")
    }
}

/// A command's run on a dead network and what its own work took (``Workstation/againstOwnWork``).
struct DeadlineRun {
    var outcome: ProcessOutcome
    /// Seconds the same command took with a connect timeout of 0.05 s, less that timeout.
    var ownWork: Double
    /// Seconds the run took, clocked by itself.
    var seconds: Double { outcome.seconds }

    /// Whether the run ended within `wait` seconds (its connect timeout) and 1 s more, over
    /// and above its own work.
    func endedWithin(_ wait: Double) -> Bool { seconds < wait + 1 + ownWork }

    /// For a failed check: both times.
    var account: String { "took \(seconds) s, its own work \(ownWork) s" }
}
