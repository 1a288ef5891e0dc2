import Auth
import ChildProcesses
import Foundation
import Models
import StoreServer
import TestSupport
import Testing

/// The `store-server` binary's administration commands, run as an operator runs them.
@Suite("store-server administration commands", .serialized)
struct AdminCommandTests {
    static func run(_ arguments: [String], stdin: String? = nil) async throws -> ProcessOutcome {
        try await ChildProcess.run(
            ServerProcess.binary,
            arguments,
            stdin: .data(Data((stdin ?? "").utf8))
        )
    }

    /// `--database` for `location`.
    static func database(_ location: DatabaseLocation) -> [String] {
        switch location {
        case .sqlite(let path): return ["--database", path]
        case .postgres(let url): return ["--database", url]
        }
    }

    /// The tests' cheap password cost, for the commands that hash a password (serve, seed,
    /// user add, user passwd); the other commands refuse the option.
    static let cost = [
        "--insecure-password-cost-for-tests", "--password-cost", String(testPasswordCost),
    ]

    @Test(
        "migrate and seed --demo on an empty database; a second seed changes nothing",
        arguments: DatabaseKind.allCases
    )
    func migrateAndSeed(kind: DatabaseKind) async throws {
        let db = Self.database(try await TestDatabases.make(kind, demo: false))
        let migrate = try await Self.run(["migrate"] + db)
        #expect(migrate.status == 0, "\(migrate.stderr)")
        let seed = try await Self.run(["seed", "--demo"] + db + Self.cost)
        #expect(seed.status == 0, "\(seed.stderr)")
        #expect(
            seed.stdout
                == "loaded 6 stores, 200 customers, 1000 reservations, 500 products, users demo (associate), demo-manager (manager), demo-admin (admin)\n"
        )
        let again = try await Self.run(["seed", "--demo"] + db + Self.cost)
        #expect(again.status == 0)
        #expect(again.stderr.hasPrefix("warning: "))
        #expect(try await Self.run(["seed"] + db + Self.cost).status == 64)
    }

    @Test(
        "user add, list, passwd and remove read passwords from stdin and use the documented exit codes",
        arguments: DatabaseKind.allCases
    )
    func users(kind: DatabaseKind) async throws {
        let location = try await TestDatabases.make(kind)
        let db = Self.database(location)
        let added = try await Self.run(
            [
                "user", "add", "ana", "--display-name", "Ana Weber", "--home-store",
                berlin.uuidString,
            ] + db + Self.cost,
            stdin: "first secret\n"
        )
        #expect(added.status == 0, "\(added.stderr)")
        let duplicate = try await Self.run(
            ["user", "add", "ana"] + db + Self.cost,
            stdin: "another secret"
        )
        #expect(duplicate.status == 1)
        #expect(duplicate.stderr == "error: user ana already exists\n")
        let badName = try await Self.run(
            ["user", "add", "ana weber"] + db + Self.cost,
            stdin: "some secret"
        )
        #expect(badName.status == 64 && badName.stderr.contains("ana weber"), "\(badName.stderr)")
        let noPassword = try await Self.run(["user", "add", "ben"] + db + Self.cost, stdin: "")
        #expect(
            noPassword.status == 64 && noPassword.stderr.hasPrefix("error: no password on stdin")
        )
        let short = try await Self.run(["user", "add", "ben"] + db + Self.cost, stdin: "short")
        #expect(short.status == 64 && short.stderr.contains("8 to 1024"), "\(short.stderr)")
        let list = try await Self.run(["user", "list", "--json"] + db)
        let page = try JSONDecoder.shopfloor.decode(
            Page<Associate>.self,
            from: Data(list.stdout.utf8)
        )
        #expect(page.items.map(\.username) == ["ana", "demo", "demo-admin", "demo-manager"])
        #expect(
            page.items[0]
                == (try Associate(username: "ana", displayName: "Ana Weber", homeStoreID: berlin))
        )
        #expect(!list.stdout.contains("pbkdf2"))
        // As text: a table with a header, columns in line, stores by short name.
        let text = try await Self.run(["user", "list"] + db)
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("USER ") == true, "\(text.stdout)")
        let storesAt = try #require(lines.first?.range(of: "STORES"), "\(text.stdout)")
        let column = lines[0].distance(from: lines[0].startIndex, to: storesAt.lowerBound)
        let ana = try #require(lines.first { $0.hasPrefix("ana ") }, "\(text.stdout)")
        #expect(ana.dropFirst(column).hasPrefix("berlin-kurfuerstendamm"), "\(text.stdout)")
        let admin = try #require(lines.first { $0.hasPrefix("demo-admin ") }, "\(text.stdout)")
        #expect(admin.dropFirst(column).hasPrefix("every store"), "\(text.stdout)")

        let server = try await TestServer.start(kind, location: location)
        do {
            _ = try await SignedClient.signIn(server.url, username: "ana", password: "first secret")
            let passwd = try await Self.run(
                ["user", "passwd", "ana"] + db + Self.cost,
                stdin: "second secret\n"
            )
            #expect(passwd.status == 0, "\(passwd.stderr)")
            await #expect(throws: (any Error).self) {
                try await SignedClient.signIn(server.url, username: "ana", password: "first secret")
            }
            let again = try await SignedClient.signIn(
                server.url,
                username: "ana",
                password: "second secret"
            )
            #expect(try await again.send("GET", "/v1/me").status == 200)
            let removed = try await Self.run(["user", "remove", "ana"] + db)
            #expect(removed.status == 0)
            do {
                _ = try await again.send("GET", "/v1/me")
                Issue.record("a removed user's session still works")
            } catch {
                #expect(
                    (error as? AuthError)?.code == .signInRequired,
                    "removing a user ends their sessions: \(error)"
                )
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        let missing = try await Self.run(["user", "remove", "ana"] + db)
        #expect(missing.status == 3)
        #expect(missing.stderr == "error: user ana does not exist\n")
        // An unknown user is 3 before the password is looked at.
        let nobody = try await Self.run(
            ["user", "passwd", "nobody"] + db + Self.cost,
            stdin: "short"
        )
        #expect(nobody.status == 3)
        #expect(nobody.stderr == "error: user nobody does not exist\n")
    }

    @Test(
        "config show, set-flag, set-minimum-version and import bump configVersion and refuse bad input",
        arguments: [DatabaseKind.sqlite]
    )
    func config(kind: DatabaseKind) async throws {
        let db = Self.database(try await TestDatabases.make(kind))
        func show() async throws -> [String: Any] {
            let run = try await Self.run(["config", "show"] + db)
            #expect(run.status == 0)
            return try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
            )
        }
        let before = try #require(await show()["configVersion"] as? String)
        let set = try await Self.run(
            ["config", "set-flag", "checkInEnabled", "false", "--market", "DE"] + db
        )
        #expect(set.status == 0, "\(set.stderr)")
        let shown = try await show()
        let after = try #require(shown["configVersion"] as? String)
        #expect(try SemanticVersion(parsing: after) > SemanticVersion(parsing: before))
        let flags = try #require(shown["featureFlags"] as? [String: Any])
        let checkIn = try #require(flags["checkInEnabled"] as? [String: Any])
        #expect((checkIn["markets"] as? [String: Bool])?["DE"] == false)

        // Unknown names and wrong types are usage errors that list what is known, and
        // change nothing.
        let versionBefore = try #require(try await show()["configVersion"] as? String)
        let wrongType = try await Self.run(["config", "set-flag", "maxPartySize", "big"] + db)
        #expect(wrongType.status == 64 && wrongType.stderr.contains("maxPartySize takes a number"))
        let newFlagScoped = try await Self.run(
            ["config", "set-flag", "newThing", "true", "--store", berlin.uuidString] + db
        )
        #expect(newFlagScoped.status == 64 && newFlagScoped.stderr.contains("newThing"))
        #expect(newFlagScoped.stderr.contains("checkInEnabled, maxPartySize"))
        let typo = try await Self.run(["config", "set-flag", "checkinEnabled", "false"] + db)
        #expect(typo.status == 64, "\(typo.stderr)")
        #expect(typo.stderr.contains("did you mean checkInEnabled?"), "\(typo.stderr)")
        let unknownApp = try await Self.run(
            ["config", "set-minimum-version", "reservationz", "1.0.0"] + db
        )
        #expect(unknownApp.status == 64 && unknownApp.stderr.contains("catalog, reservations"))
        #expect(try await show()["configVersion"] as? String == versionBefore)
        let twoScopes = try await Self.run(
            ["config", "set-flag", "checkInEnabled", "true", "--market", "DE", "--region", "DE-BE"]
                + db
        )
        #expect(twoScopes.status == 64)
        let unknownStore = try await Self.run(
            ["config", "set-flag", "checkInEnabled", "true", "--store", UUID().uuidString] + db
        )
        #expect(unknownStore.status == 1 && unknownStore.stderr.contains("does not exist"))

        #expect(
            try await Self.run(["config", "set-minimum-version", "catalog", "2.0.0"] + db).status
                == 0
        )
        #expect(
            try await Self.run(["config", "set-minimum-version", "catalog", "two"] + db).status
                == 64
        )
        #expect(
            ((try await show()["minimumClientVersions"]) as? [String: String])?["catalog"]
                == "2.0.0"
        )

        let directory = try TestDatabases.temporaryDirectory("config")
        let file = directory.appendingPathComponent("config.json")
        try Data("{\"configVersion\": \"9.0.0\", \"minimumClientVersion\": \"1.0\"}".utf8).write(
            to: file
        )
        let invalid = try await Self.run(["config", "import", file.path] + db)
        #expect(invalid.status == 1)
        #expect(
            invalid.stderr.contains(file.path) && invalid.stderr.contains("minimumClientVersion")
        )
        #expect(
            try await Self.run(
                ["config", "import", directory.appendingPathComponent("none.json").path] + db
            ).status == 1
        )
        let exported = try await Self.run(["config", "show"] + db).stdout
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(exported.utf8)) as? [String: Any]
        )
        object["configVersion"] = "9.0.0"
        try JSONSerialization.data(withJSONObject: object).write(to: file)
        let imported = try await Self.run(["config", "import", file.path] + db)
        #expect(imported.status == 0, "\(imported.stderr)")
        let reimported = try await show()
        #expect(reimported["configVersion"] as? String == "9.0.0")
        #expect(((reimported["minimumClientVersions"]) as? [String: String])?["catalog"] == "2.0.0")
    }

    @Test("unusable databases and options end with an error naming them")
    func badInput() async throws {
        let directory = try TestDatabases.temporaryDirectory("corrupt")
        let corrupt = directory.appendingPathComponent("store.sqlite")
        try Data(repeating: 0x42, count: 4096).write(to: corrupt)
        let run = try await Self.run(["migrate", "--database", corrupt.path])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: ") && run.stderr.contains(corrupt.path))
        let badURL = try await Self.run(["migrate", "--database", "postgres://"])
        #expect(badURL.status == 1 && badURL.stderr.contains("postgres://"))
        #expect(try await Self.run(["serve", "--port", "70000"]).status == 64)
        #expect(try await Self.run(["serve", "--access-token-ttl", "0"]).status == 64)
        #expect(try await Self.run(["serve", "--metrics-port", "70000"]).status == 64)
        #expect(try await Self.run(["serve", "--session-lifetime-days", "0"]).status == 64)
        // A cost below Auth's floor makes a wrong password answer faster than an unknown user:
        // only with the flag named for tests.
        let cheap = try await Self.run([
            "seed", "--demo", "--database", corrupt.path, "--password-cost", "1000",
        ])
        #expect(cheap.status == 64)
        #expect(cheap.stderr.contains("--insecure-password-cost-for-tests"), "\(cheap.stderr)")
        // Options only where they act: the commands that never hash a password refuse a cost.
        for command in [
            ["migrate"], ["backup", "x.sqlite"], ["config", "show"], ["user", "list"],
        ] {
            let refused = try await Self.run(
                command + ["--database", corrupt.path, "--password-cost", "600000"]
            )
            #expect(refused.status == 64, "\(command): \(refused.stderr)")
            #expect(
                refused.stderr.hasPrefix("error: ") && refused.stderr.contains("--password-cost"),
                "\(command): \(refused.stderr)"
            )
        }
        #expect(try await Self.run(["--version"]).stdout == "0.1.0\n")
    }

    @Test("serve on a port in use exits 1 naming the address, not the socket call")
    func portInUse() async throws {
        let (fd, port) = try PeerListener.listeningSocket()
        defer { close(fd) }
        let location = try await TestDatabases.make(.sqlite)
        let run = try await Self.run(
            ["serve", "--port", String(port)] + Self.database(location) + Self.cost
        )
        #expect(run.status == 1, "\(run.stderr)")
        #expect(
            run.stderr.contains("error: cannot listen on 127.0.0.1:\(port): the address is in use"),
            "\(run.stderr)"
        )
        #expect(!run.stderr.contains("bind(descriptor"), "\(run.stderr)")
    }
}
