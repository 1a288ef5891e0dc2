import ChildProcesses
import Foundation
import Models
import Testing

/// Issue 24 point 5, the client side, as real processes against a real server: the stores a
/// user works for, `--store` by short name, `list` on the server's home store, and
/// `--all-stores` for administrators only (exit 13 for the others).
@Suite("reservations and the stores a user works for", .serialized)
struct StoresCommandTests {
    @Test("stores lists the user's stores with short names; --store takes one; 403 exits 13")
    func storesByShortName() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "stores-client")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await StoreServerProcess(
            database: directory.appendingPathComponent("s.sqlite")
        )
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)

        // The Berlin associate sees Berlin only, its short name, marked as home.
        let listed = try await station.run(["stores", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let stores = try decode([Store].self, listed)
        #expect(stores.map(\.id) == [DemoStores.berlin])
        #expect(stores.first?.shortName == "berlin-kurfuerstendamm")
        // At a terminal (a pseudo-terminal from script(1)): a table.
        let table = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/script"),
            [
                "-q", "-e", "-c", "'\(CommandRunner.builtBinary("reservations").path)' stores",
                "/dev/null",
            ],
            environment: station.environment
        )
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("SHORT NAME"), "\(table.stdout)")
        // script(1) ends lines with CR LF, one Character to Swift.
        let berlinLine = table.stdout.split(whereSeparator: \.isNewline).first {
            $0.contains("berlin-kurfuerstendamm")
        }
        let marked = berlinLine?.split(separator: " ").first == "*"
        #expect(marked, "\(table.stdout)")

        // A booking at Berlin by short name, then found by `list` on the home store and by
        // `list --store` with the short name; another user's store is not among the user's.
        let booked = try await station.run(
            [
                "new", "--store", "berlin-kurfuerstendamm", "--start", "tomorrow 10:00",
                "--topic", "Fitting", "--no-input", "--json", "--field", "givenName=Ana",
                "--field", "familyName=Weber", "--field", "email=ana.stores@example.com",
            ]
        )
        #expect(booked.status == 0, "\(booked.stderr)")
        let created = try decode(ReservationDetail.self, booked)
        #expect(created.store.id == DemoStores.berlin)
        for arguments in [
            ["list", "--date", "tomorrow", "--json"],
            ["list", "--date", "tomorrow", "--store", "berlin-kurfuerstendamm", "--json"],
            ["list", "--date", "tomorrow", "--store", "Berlin Kurfürstendamm", "--json"],
        ] {
            let run = try await station.run(arguments)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            let page = try decode(Page<ReservationDetail>.self, run)
            #expect(page.items.contains { $0.id == created.id }, "\(arguments)")
            #expect(page.items.allSatisfy { $0.store.id == DemoStores.berlin }, "\(arguments)")
        }
        let elsewhere = try await station.run(["list", "--store", "perth-hay-street"])
        #expect(elsewhere.status == 3, "\(elsewhere.stderr)")
        #expect(elsewhere.stderr.contains("berlin-kurfuerstendamm"), "\(elsewhere.stderr)")

        // Every store of the server: refused to an associate with exit 13, saying why.
        let refused = try await station.run(["list", "--all-stores"])
        #expect(refused.status == 13, "\(refused.stderr)")
        #expect(refused.stderr.contains("not permitted"), "\(refused.stderr)")
        let both = try await station.run([
            "list", "--all-stores", "--store", "berlin-kurfuerstendamm",
        ])
        #expect(both.status == 64)

        // The administrator sees every store and may list them all.
        let admin = try Workstation()
        defer { admin.remove() }
        try await admin.login(server, user: "demo-admin")
        let every = try decode([Store].self, try await admin.run(["stores", "--json"]))
        #expect(Set(every.map(\.id)).isSuperset(of: [DemoStores.berlin, DemoStores.perth]))
        #expect(every.allSatisfy { $0.shortName != nil })
        let all = try await admin.run(["list", "--date", "tomorrow", "--all-stores", "--json"])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(
            try decode(Page<ReservationDetail>.self, all).items.contains { $0.id == created.id }
        )
        // whoami says the role and the stores.
        let me = try decode(Associate.self, try await station.run(["whoami", "--json"]))
        #expect(me.role == .associate && me.storeIDs == [DemoStores.berlin])
        let adminSays = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/script"),
            [
                "-q", "-e", "-c", "'\(CommandRunner.builtBinary("reservations").path)' whoami",
                "/dev/null",
            ],
            environment: admin.environment
        )
        #expect(adminSays.stdout.contains("role admin (every store)"), "\(adminSays.stdout)")
        let perth = try await admin.run(["config", "--store", "perth-hay-street", "--json"])
        #expect(perth.status == 0, "\(perth.stderr)")
        #expect(try decode(ClientConfigurationResponse.self, perth).store?.id == DemoStores.perth)
    }
}
