import ChildProcesses
import Foundation
import Models
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// Issue 18: slow and lost networks, stopped and interrupted clients, a server stopped with
// requests in flight. The links are made on loopback by the relay `make bench-network`
// uses between its namespaces (Benchmarks/network/delay_relay.py); a dead network is a
// listening socket whose accept queue is full (SYNs go unanswered).

extension Workstation {
    /// Runs `reservations` (or `app`) with this home, killing it after `timeout` seconds
    /// (the outcome says so: ``ProcessOutcome/timedOut``, and how long it ran).
    func bounded(
        _ arguments: [String],
        app: String = "reservations",
        stdin: Data? = nil,
        timeout: Double = 60
    ) async throws -> ProcessOutcome {
        try await CommandRunner.run(
            CommandRunner.builtBinary(app),
            arguments,
            environment: environment,
            stdin: stdin,
            timeout: timeout
        )
    }

    /// Signs in through `url` (a relay or the server).
    func login(url: String) async throws {
        let run = try await bounded(
            ["login", "--server", url, "--user", "demo", "--password-stdin"],
            stdin: Data("shopfloor-demo\n".utf8)
        )
        #expect(run.status == 0, "login through \(url): \(run.stderr)")
    }
}

/// The kernel's file locks (flock, POSIX, OFD) held by `pid`, from /proc/locks.
func fileLocks(of pid: Int32) throws -> [String] {
    let text = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
    return text.split(separator: "\n").map(String.init).filter { line in
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:567 0 EOF" (a blocked waiter has "->").
        let pidField = fields.firstIndex { $0 == "READ" || $0 == "WRITE" }.map { $0 + 1 }
        return pidField.map { $0 < fields.count && fields[$0] == "\(pid)" } ?? false
    }
}

/// Lines of the server's log that record a status change of `id` to `status`.
func statusChanges(_ server: StoreServerProcess, id: UUID, to status: String) throws -> Int {
    let log = try String(contentsOf: server.log, encoding: .utf8)
    return log.split(separator: "\n").filter {
        $0.contains("reservation status changed") && $0.contains(id.uuidString)
            && $0.contains(status)
    }.count
}

/// `count` different confirmed reservations at stores where check-in is on.
func confirmedReservations(_ station: Workstation, count: Int) async throws -> [ReservationDetail] {
    let run = try await station.run([
        "search", "a", "--status", "confirmed", "--limit", "200", "--json",
    ])
    #expect(run.status == 0, "search: \(run.stderr)")
    let usable = try decode(Page<ReservationDetail>.self, run).items.filter {
        ![DemoStores.perth, DemoStores.sydney].contains($0.reservation.storeID)
    }
    try #require(usable.count >= count, "only \(usable.count) confirmed reservations")
    return Array(usable.prefix(count))
}

/// The network profiles of `make bench-network`, on loopback.
enum SlowLink: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case threeG = "3G"
    case edge = "Edge"

    var link: DelayRelay.Link { self == .threeG ? .threeG : .edge }
    var testDescription: String { rawValue }
}

// The tests on slow links mostly wait on the relay, so they run side by side; so do the ones
// in `Deadlines` that time an upper bound (a deadline, a dead network): they wait on a relay
// or a black hole too. One after the other they were 61 s of the 63 s that IntegrationTests
// took, with both cores idle for 25 s of it. Each one's own commands run one at a time: side
// by side, 14 commands on a dead network took up to 3.4 s against the bound of 3 s.
@Suite("reservations on slow, lost and dead links")
struct AdverseNetworkTests {
    @Test(
        "Every reservations flow succeeds over a 3G or Edge link: no timeout cuts a slow answer short",
        arguments: SlowLink.allCases
    )
    func slowLinks(_ profile: SlowLink) async throws {
        let own = try await StoreServerProcess.scratch("slow-\(profile.rawValue)")
        defer { own.discard() }
        let relay = try await DelayRelay(to: own.port, link: profile.link)
        defer { relay.terminate() }
        let station = try Workstation()
        defer { station.remove() }
        let oneWay = profile.link.delayMilliseconds / 1000

        let login = try await station.bounded(
            ["login", "--server", relay.url, "--user", "demo", "--password-stdin"],
            stdin: Data("shopfloor-demo\n".utf8)
        )
        #expect(login.status == 0, "login: \(login.stderr)")
        let found = try await confirmedReservation(station)
        let listed = try await station.bounded(["list", "--date", "today", "--json"])
        #expect(listed.status == 0, "list: \(listed.stderr)")
        let searched = try await station.bounded(["search", found.customer.familyName, "--json"])
        #expect(searched.status == 0, "search: \(searched.stderr)")
        #expect(
            try decode(Page<ReservationDetail>.self, searched).items.contains {
                $0.id == found.id
            }
        )
        let shown = try await station.bounded(
            ["show", found.reservation.confirmationCode.description, "--json"]
        )
        #expect(shown.status == 0, "show: \(shown.stderr)")
        #expect(!shown.stderr.contains("offline"))
        // A new connection's handshake and the request each cost a round trip.
        #expect(shown.seconds >= 4 * oneWay, "show took \(shown.seconds) s: not through the link")
        let checkedIn = try await station.bounded(
            ["check-in", found.reservation.confirmationCode.description, "--json"]
        )
        #expect(checkedIn.status == 0, "check-in: \(checkedIn.stderr)")
        #expect(try decode(ReservationDetail.self, checkedIn).reservation.status == .checkedIn)
        if profile == .edge {
            // Sign-in is several round trips: on Edge it outlasts the connect timeout.
            #expect(login.seconds > 2, "login took \(login.seconds) s")
        }
        let counts = await relay.stop()
        #expect(((counts["requests"] as? [String: Int])?["GET"] ?? 0) >= 4)
    }

    @Test(
        "catalog search and show with its image succeed over a 3G or Edge link",
        arguments: SlowLink.allCases
    )
    func catalogOnSlowLinks(_ profile: SlowLink) async throws {
        let own = try await StoreServerProcess.scratch("catalog-slow-\(profile.rawValue)")
        defer { own.discard() }
        let relay = try await DelayRelay(to: own.port, link: profile.link)
        defer { relay.terminate() }
        let station = try Workstation()
        defer { station.remove() }
        let login = try await station.bounded(
            ["login", "--server", relay.url, "--user", "demo", "--password-stdin"],
            app: "catalog",
            stdin: Data("shopfloor-demo\n".utf8)
        )
        try #require(login.status == 0, "login: \(login.stderr)")
        let searched = try await station.bounded(
            ["search", "e", "--limit", "5", "--json"],
            app: "catalog"
        )
        try #require(searched.status == 0, "search: \(searched.stderr)")
        let product = try #require(try decode(Page<Product>.self, searched).items.first)
        let image = station.home.appendingPathComponent("image.png")
        let shown = try await station.bounded(
            ["show", product.gtin.gtin14, "--json", "--image-save", image.path],
            app: "catalog"
        )
        #expect(shown.status == 0, "show: \(shown.stderr)")
        #expect(!shown.stderr.contains("offline"), "\(shown.stderr)")
        #expect(try decode(Product.self, shown).gtin == product.gtin)
        // The whole PNG crossed the link: its signature and more than a header.
        let bytes = try Data(contentsOf: image)
        #expect(bytes.count > 100 && bytes.prefix(8) == Data([137, 80, 78, 71, 13, 10, 26, 10]))
        // Product and image: two requests on the link at least, each a round trip or more.
        let oneWay = profile.link.delayMilliseconds / 1000
        #expect(shown.seconds >= 4 * oneWay, "show took \(shown.seconds) s: not through the link")
    }

}

extension AdverseNetworkTests {
    @Suite("deadlines on slow and dead links")
    struct Deadlines {}
}

extension AdverseNetworkTests.Deadlines {
    @Test(
        "An answer slower than the connect timeout still arrives; only the deadline ends a wait, and then kept data answers"
    )
    func slowerThanConnectTimeout() async throws {
        let own = try await StoreServerProcess.scratch("slower")
        defer { own.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(own)
        let found = try await confirmedReservation(station)
        let code = found.reservation.confirmationCode.description
        // 1.1 s each way: every answer takes longer than the 2 s connect timeout (a request
        // on a new connection 4.4 s, with its handshake).
        let relay = try await DelayRelay(to: own.port, link: .init(delayMilliseconds: 1_100))
        defer { relay.terminate() }
        let slow = try Workstation()
        defer { slow.remove() }
        let login = try await slow.bounded(
            ["login", "--server", relay.url, "--user", "demo", "--password-stdin"],
            stdin: Data("shopfloor-demo\n".utf8)
        )
        #expect(login.status == 0, "login: \(login.stderr)")
        #expect(login.seconds > 4, "login took \(login.seconds) s")

        // Deadlines are checked on the commands' own lifetimes (``Workstation/clocked``).
        let (cut, _) = try await slow.clocked(["show", code, "--deadline", "2"], timeout: 60)
        #expect(cut.status == 6, "\(cut.stderr)")
        #expect(cut.seconds < 3, "took \(cut.seconds) s")
        let shown = try await slow.bounded(["show", code, "--json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(!shown.stderr.contains("offline"))
        #expect(shown.seconds > 3, "took \(shown.seconds) s")
        #expect(try decode(ReservationDetail.self, shown).id == found.id)
        let (kept, _) = try await slow.clocked(
            ["show", code, "--deadline", "2", "--json"],
            timeout: 60
        )
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stderr.contains("offline"))
        #expect(try decode(ReservationDetail.self, kept).id == found.id)
        #expect(kept.seconds < 3, "took \(kept.seconds) s")
    }

    @Test("A check-in whose answer is lost is retried with its Idempotency-Key and applied once")
    func lostAnswerAppliedOnce() async throws {
        let own = try await StoreServerProcess.scratch("lost-answer")
        defer { own.discard() }
        let relay = try await DelayRelay(
            to: own.port,
            link: .init(delayMilliseconds: 20),
            loseAnswers: 1,
            loseMatch: "POST /v1/reservations/"
        )
        defer { relay.terminate() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(url: relay.url)
        let found = try await confirmedReservation(station)
        #expect(try statusChanges(own, id: found.id, to: "checkedIn") == 0)

        let checkIn = try await station.bounded(["check-in", found.id.uuidString, "--json"])
        #expect(checkIn.status == 0, "\(checkIn.stderr)")
        let detail = try decode(ReservationDetail.self, checkIn)
        #expect(detail.reservation.status == .checkedIn)
        #expect(detail.reservation.version == found.reservation.version + 1)
        #expect(!checkIn.stderr.contains("already"), "\(checkIn.stderr)")

        let counts = await relay.stop()
        #expect(counts["answersLost"] as? Int == 1)
        #expect((counts["requests"] as? [String: Int])?["POST"] ?? 0 >= 2, "\(counts)")
        // The server's own record: one change, one version step.
        #expect(try statusChanges(own, id: found.id, to: "checkedIn") == 1)
        let direct = try Workstation()
        defer { direct.remove() }
        try await direct.login(own)
        let after = try decode(
            ReservationDetail.self,
            try await direct.run(["show", found.id.uuidString, "--json"])
        )
        #expect(after.reservation.version == found.reservation.version + 1)
        #expect(after.reservation.status == .checkedIn)
    }

    @Test(
        "On a dead network every reservations command ends within the connect timeout + 1 s, offline, with kept data where there is some"
    )
    func everyCommandOnDeadNetwork() async throws {
        let own = try await StoreServerProcess.scratch("dead-all")
        defer { try? FileManager.default.removeItem(at: own.directory) }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(own)
        let found = try await confirmedReservation(station)
        let id = found.id.uuidString
        let code = found.reservation.confirmationCode.description
        let store = found.reservation.storeID.uuidString
        for warm in [
            ["list", "--date", "today", "--json"], ["search", found.customer.familyName, "--json"],
            ["show", code, "--json"], ["config", "--json"],
        ] {
            let run = try await station.run(warm)
            #expect(run.status == 0, "\(warm): \(run.stderr)")
        }
        let port = own.port
        await own.stop()
        let blackHole = try await BlackHole(port: port)
        defer { blackHole.close() }

        // (arguments, stdin, the exit codes that are right: 0 with kept data, else 6)
        let commands: [([String], String?, Set<Int32>)] = [
            (["list", "--date", "today", "--json"], nil, [0]),
            (["search", found.customer.familyName, "--json"], nil, [0]),
            (["show", code, "--json"], nil, [0]),
            (["show", id, "--json"], nil, [0]),
            (["show", "0000-0000"], nil, [6]),
            (["config", "--json"], nil, [0]),
            (["whoami"], nil, [0, 6]),
            (["check-in", id], nil, [6]),
            (["check-in", code], nil, [6]),
            (["cancel", id], nil, [6]),
            (["reschedule", id, "--start", "2031-06-02 10:00"], nil, [6]),
            (
                [
                    "new", "--store", store, "--field", "givenName=Ana", "--field",
                    "familyName=Weber", "--start", "2031-06-02 10:00", "--topic", "Fitting",
                    "--no-input",
                ], nil, [6]
            ),
            (["list", "--date", "today", "--store", store, "--json"], nil, [0, 6]),
            (["login", "--user", "demo", "--password-stdin"], "shopfloor-demo\n", [6]),
            (["logout"], nil, [0]),
        ]
        // Three at a time, as from three terminals (most of each run is its connect timeout),
        // then sign-in and sign-out, in that order: sign-out removes the kept data the others
        // answer from.
        let together = Array(commands.dropLast(2))
        var outcomes: [(arguments: [String], expected: Set<Int32>, result: DeadlineRun)] = []
        for first in stride(from: 0, to: together.count, by: 3) {
            let wave = together[first..<min(first + 3, together.count)]
            try await withThrowingTaskGroup(
                of: (arguments: [String], expected: Set<Int32>, result: DeadlineRun).self
            ) { group in
                for (arguments, stdin, expected) in wave {
                    group.addTask {
                        // Each against its own work at that moment: three run at once
                        // (``Workstation/againstOwnWork``).
                        let result = try await station.againstOwnWork(
                            arguments,
                            stdin: stdin.map { Data($0.utf8) },
                            timeout: 30
                        )
                        return (arguments, expected, result)
                    }
                }
                for try await outcome in group { outcomes.append(outcome) }
            }
        }
        for (arguments, stdin, expected) in commands.suffix(2) {
            let result = try await station.againstOwnWork(
                arguments,
                stdin: stdin.map { Data($0.utf8) },
                timeout: 30
            )
            outcomes.append((arguments, expected, result))
        }
        for (arguments, expected, result) in outcomes {
            #expect(
                expected.contains(result.outcome.status),
                "\(arguments.joined(separator: " ")): exit \(result.outcome.status): \(result.outcome.stderr)"
            )
            #expect(
                result.endedWithin(2),
                "\(arguments.joined(separator: " ")) \(result.account)"
            )
            let said = result.outcome.stderr
            #expect(
                said.contains("cannot be reached") || said.contains("offline")
                    || said.contains("could not be told"),
                "\(arguments.joined(separator: " ")) did not say it is offline: \(said)"
            )
        }
    }
}

/// One test at a time: `interruptedMidRequest` requires an interrupted command to exit within
/// a second (`seconds < 1`), and each test starts its own store-server, a `DelayRelay` (Python)
/// and several app processes, whose starts beside it could stretch that second.
@Suite("No lock across a network wait, user input or a stop; clean interrupts", .serialized)
struct StoppedAndInterruptedTests {
    @Test(
        "A client stopped (SIGTSTP) mid-request or at a prompt holds no lock: other clients and suite-defaults carry on"
    )
    func stoppedClientHoldsNoLock() async throws {
        let own = try await StoreServerProcess.scratch("stopped")
        defer { own.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(own)
        let two = try await confirmedReservations(station, count: 2)
        let (first, second) = (two[0], two[1])
        let relay = try await DelayRelay(
            to: own.port,
            hold: ["GET /v1/reservations/\(first.id.uuidString)"]
        )
        defer { relay.terminate() }
        try await station.login(url: relay.url)

        // One client waits on the network, another at a password prompt (stdin left open).
        let waiting = try await CommandRunner.start(
            CommandRunner.builtBinary("reservations"),
            ["show", first.id.uuidString, "--json"],
            environment: station.environment
        )
        try await relay.waitFor("held GET /v1/reservations/\(first.id.uuidString)")
        let prompting = try await ChildProcess.start(
            CommandRunner.builtBinary("reservations"),
            ["login", "--user", "demo", "--password-stdin"],
            environment: station.environment,
            stdin: .writer,
            stdout: .discarded,
            stderr: .discarded
        )
        // Released (at the latest) at the end of the test: a child still running is killed.
        for process in [waiting, prompting] {
            process.signal(SIGTSTP)
        }
        for process in [waiting, prompting] {
            #expect(
                await process.waitUntilStopped(),
                "process \(process.processIdentifier) is not stopped"
            )
            #expect(try fileLocks(of: process.processIdentifier).isEmpty)
        }

        // Meanwhile, in the same suite container:
        let shown = try await station.bounded(
            ["show", second.id.uuidString, "--json"],
            timeout: 20
        )
        #expect(!shown.timedOut && shown.status == 0, "show: \(shown.stderr)")
        let checkedIn = try await station.bounded(
            ["check-in", second.id.uuidString, "--json"],
            timeout: 20
        )
        #expect(
            !checkedIn.timedOut && checkedIn.status == 0,
            "check-in: \(checkedIn.stderr)"
        )
        let relogin = try await station.bounded(
            ["login", "--user", "demo", "--password-stdin"],
            stdin: Data("shopfloor-demo\n".utf8),
            timeout: 20
        )
        #expect(!relogin.timedOut && relogin.status == 0, "login: \(relogin.stderr)")
        let written = try await station.bounded(
            ["write", "lastShift", "-string", "late"],
            app: "suite-defaults",
            timeout: 20
        )
        #expect(
            !written.timedOut && written.status == 0,
            "suite-defaults: \(written.stderr)"
        )
        let read = try await station.bounded(
            ["read", "lastShift"],
            app: "suite-defaults",
            timeout: 20
        )
        #expect(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "late")

        // Resumed, the prompt takes its answer and the waiting client is stopped for good.
        for process in [waiting, prompting] { process.signal(SIGCONT) }
        prompting.write(Data("shopfloor-demo\n".utf8))
        prompting.finishInput()
        #expect(await prompting.wait().status == 0)
        #expect(await waiting.stop(with: SIGTERM).outcome.status == 143)
    }

    @Test(
        "catalog prefetch stopped (SIGTSTP) while its downloads wait holds no lock: the cache, the session and the settings stay usable"
    )
    func stoppedPrefetchHoldsNoLock() async throws {
        let own = try await StoreServerProcess.scratch("stopped-prefetch")
        defer { own.discard() }
        // Every image request is held (the GTINs are stored as 14 digits: "0…"); product
        // pages pass.
        let relay = try await DelayRelay(to: own.port, hold: ["GET /v1/products/0"])
        defer { relay.terminate() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(url: relay.url)
        let prefetch = try await CommandRunner.start(
            CommandRunner.builtBinary("catalog"),
            ["prefetch", "--json"],
            environment: station.environment
        )
        try await relay.waitFor("held GET /v1/products/0")
        prefetch.signal(SIGTSTP)
        try #require(await prefetch.waitUntilStopped(), "prefetch is not stopped")
        #expect(try fileLocks(of: prefetch.processIdentifier).isEmpty)

        // The image cache, the suite's settings and the session, from other processes.
        let stats = try await station.bounded(
            ["cache", "stats", "--json"],
            app: "catalog",
            timeout: 20
        )
        #expect(!stats.timedOut && stats.status == 0, "cache stats: \(stats.stderr)")
        let written = try await station.bounded(
            ["write", "lastShift", "-string", "early"],
            app: "suite-defaults",
            timeout: 20
        )
        #expect(!written.timedOut && written.status == 0, "\(written.stderr)")
        let whoami = try await station.bounded(["whoami"], app: "catalog", timeout: 20)
        #expect(!whoami.timedOut && whoami.status == 0, "whoami: \(whoami.stderr)")
        let cleared = try await station.bounded(["cache", "clear"], app: "catalog", timeout: 20)
        #expect(!cleared.timedOut && cleared.status == 0, "cache clear: \(cleared.stderr)")

        // Resumed and then stopped for good: 143, a summary that says so, nothing reserved.
        prefetch.signal(SIGCONT)
        let stopped = await prefetch.stop(with: SIGTERM).outcome
        #expect(stopped.status == 143)
        let summary = try JSONDecoder().decode(PrefetchSummary.self, from: stopped.stdoutData)
        #expect(summary.interrupted && summary.loaded == 0)
        let after = try await station.bounded(
            ["cache", "stats", "--json"],
            app: "catalog",
            timeout: 20
        )
        let report = try JSONDecoder().decode(CacheReport.self, from: Data(after.stdout.utf8))
        #expect(report.reservedBytes == 0 && report.entries == 0)
    }

    @Test(
        "reservations interrupted mid-request exits 130 (SIGINT) or 143 (SIGTERM) at once, leaving no lock and nothing half-done",
        arguments: [SIGINT, SIGTERM]
    )
    func interruptedMidRequest(_ signal: Int32) async throws {
        let own = try await StoreServerProcess.scratch("interrupted")
        defer { own.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(own)
        let found = try await confirmedReservation(station)
        let relay = try await DelayRelay(
            to: own.port,
            hold: [
                "GET /v1/reservations/\(found.id.uuidString)",
                "POST /v1/reservations/\(found.id.uuidString)/check-in",
            ]
        )
        defer { relay.terminate() }
        try await station.login(url: relay.url)
        let expected: Int32 = signal == SIGINT ? 130 : 143

        for (arguments, held) in [
            (["show", found.id.uuidString, "--json"], "held GET"),
            (["check-in", found.id.uuidString, "--json"], "held POST"),
        ] {
            let process = try await CommandRunner.start(
                CommandRunner.builtBinary("reservations"),
                arguments,
                environment: station.environment
            )
            try await relay.waitFor(held)
            let (seconds, outcome) = await process.stop(with: signal)
            #expect(outcome.status == expected, "\(arguments)")
            #expect(seconds < 1, "\(arguments): exit took \(seconds) s")
            #expect(outcome.stdoutData.isEmpty, "no partial output")
        }
        // The check-in was never sent on: the reservation is as it was, and a new attempt
        // (a new key, nothing pending) goes through; the session and settings work.
        let direct = try Workstation()
        defer { direct.remove() }
        try await direct.login(own)
        let now = try decode(
            ReservationDetail.self,
            try await direct.run(["show", found.id.uuidString, "--json"])
        )
        #expect(now.reservation.status == .confirmed)
        #expect(now.reservation.version == found.reservation.version)
        let retried = try await direct.bounded(
            ["check-in", found.id.uuidString, "--json"],
            timeout: 20
        )
        #expect(retried.status == 0, "\(retried.stderr)")
        let whoami = try await station.bounded(["whoami"], timeout: 20)
        #expect(whoami.status == 0, "\(whoami.stderr)")
        let written = try await station.bounded(
            ["write", "k", "-int", "1"],
            app: "suite-defaults",
            timeout: 20
        )
        #expect(written.status == 0)
    }
}

@Suite("store-server stopped with requests in flight", .serialized)
struct ServerDrainTests {
    @Test(
        "SIGINT or SIGTERM: new connections are refused, the request in flight is answered, exit 130 or 143",
        arguments: [SIGINT, SIGTERM]
    )
    func drains(_ signal: Int32) async throws {
        let server = try await StoreServerProcess.scratch("drain")
        defer { server.discard() }
        // A sign-in whose body is half sent: the server is in the middle of that request.
        let form = "grant_type=password&username=demo&password=shopfloor-demo"
        let head =
            "POST /v1/auth/token HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n\r\n"
        let inFlight = try RawConnection(port: server.port)
        defer { inFlight.close() }
        try inFlight.send(head + form.prefix(12))
        // The server has taken the connection once another request is answered after it.
        let health = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/curl"),
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                "\(server.url)/health",
            ]
        )
        #expect(health.stdout == "200")

        server.child.signal(signal)
        // The listener closes: new connections are refused while the old one is served.
        let end = Date(timeIntervalSinceNow: 10)
        var refused = false
        while Date() < end {
            if RawConnection.refused(port: server.port) {
                refused = true
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(refused, "new connections were still accepted after the signal")
        #expect(server.child.isRunning, "the server exited with a request in flight")

        try inFlight.send(String(form.dropFirst(12)))
        let answer = try await inFlight.receiveAll(timeout: 10)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(300))")
        #expect(answer.contains("access_token"))
        #expect(await server.child.wait().status == (signal == SIGINT ? 130 : 143))
    }
}

/// A plain TCP connection to 127.0.0.1, for requests written by hand.
final class RawConnection {
    private var fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.address(port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0, "cannot connect to port \(port)")
    }

    /// Whether a new connection to `port` is refused right now.
    static func refused(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var address = address(port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected != 0 && errno == ECONNREFUSED
    }

    private static func address(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        try #require(written == bytes.count, "short write")
    }

    /// Everything until the server closes or `timeout` seconds of silence.
    func receiveAll(timeout: Double) async throws -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        var silentUntil = ContinuousClock.now + .seconds(timeout)
        while true {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else {
                guard ContinuousClock.now < silentUntil else { break }
                try await Task.sleep(for: .milliseconds(10))
                continue
            }
            silentUntil = ContinuousClock.now + .seconds(timeout)
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[..<count]
            let text = String(decoding: received, as: UTF8.self)
            // One whole answer: its head and Content-Length bytes of body.
            if let split = text.range(of: "\r\n\r\n"),
                let lengthLine = text[..<split.lowerBound].split(separator: "\r\n").first(where: {
                    $0.lowercased().hasPrefix("content-length:")
                }),
                let length = Int(
                    lengthLine.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)
                ),
                text.utf8.count - text[..<split.upperBound].utf8.count >= length
            {
                break
            }
        }
        return String(decoding: received, as: UTF8.self)
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}
