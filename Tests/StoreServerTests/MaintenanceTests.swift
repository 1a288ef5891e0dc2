import ChildProcesses
import Foundation
import Testing

@testable import StoreServer

/// Issue 25, points 3 and 4: `migrate --status`, `backup` and its restore, and a database
/// directory others may enter refused — run as an operator runs them.
@Suite("operating the database: migrate --status, backup and restore, private directories")
struct MaintenanceTests {
    @Test(
        "migrate --status lists the pending steps and changes nothing; after migrate it is up to date",
        arguments: DatabaseKind.allCases
    )
    func migrateStatus(kind: DatabaseKind) async throws {
        let location = try await TestDatabases.make(kind, demo: false)
        let db = AdminCommandTests.database(location)
        let latest = Migrations.latest
        let before = try await AdminCommandTests.run(["migrate", "--status"] + db)
        #expect(before.status == 0, "\(before.stderr)")
        let lines = before.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "schema version 0 of \(latest): \(Migrations.all.count) pending")
        #expect(lines.dropFirst().first == "pending 1 \(Migrations.all[0].name)")
        #expect(lines.count == Migrations.all.count + 1)
        if case .sqlite(let path) = location {
            #expect(!FileManager.default.fileExists(atPath: path), "--status created the database")
        }
        #expect(try await AdminCommandTests.run(["migrate"] + db).status == 0)
        let after = try await AdminCommandTests.run(["migrate", "--status"] + db)
        #expect(after.stdout == "schema version \(latest) of \(latest): up to date\n")
    }

    @Test("backup writes a 0600 copy while the server serves, and the restored copy serves it")
    func backupAndRestore() async throws {
        let server = try await TestServer.start(.sqlite)
        guard case .sqlite(let path) = server.location else { return }
        let db = AdminCommandTests.database(server.location)
        let added = try await AdminCommandTests.run(
            ["user", "add", "zoe", "--home-store", berlin.uuidString] + db + AdminCommandTests.cost,
            stdin: "backed up secret\n"
        )
        #expect(added.status == 0, "\(added.stderr)")
        _ = try await server.client()
        let directory = try TestDatabases.temporaryDirectory("backup")
        let file = directory.appendingPathComponent("store-backup.sqlite").path
        let backup = try await AdminCommandTests.run(["backup", file] + db)
        #expect(backup.status == 0, "\(backup.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions]
        #expect((mode as? NSNumber)?.intValue == 0o600)
        let again = try await AdminCommandTests.run(["backup", file] + db)
        #expect(again.status == 1)
        #expect(again.stderr.contains("exists"))
        // The server keeps serving after the copy.
        _ = try await server.client()
        await server.stop()

        // Restore: the copy in place of the database, in a fresh private directory.
        let restoredDirectory = try TestDatabases.temporaryDirectory("restored")
        let restored = restoredDirectory.appendingPathComponent("store.sqlite").path
        try FileManager.default.copyItem(atPath: file, toPath: restored)
        let revived = try await TestServer.start(.sqlite, location: .sqlite(path: restored))
        _ = try await revived.client(username: "zoe", password: "backed up secret")
        #expect(try await revived.client().send("GET", "/v1/stores?limit=2").status == 200)
        await revived.stop()
        #expect(path != restored)
    }

    @Test("backup of a PostgreSQL database points to pg_dump and writes nothing")
    func backupPostgres() async throws {
        let location = try await TestDatabases.make(.postgres, demo: false)
        let file = try TestDatabases.temporaryDirectory("backup").appendingPathComponent("b").path
        let outcome = try await AdminCommandTests.run(
            ["backup", file] + AdminCommandTests.database(location)
        )
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("pg_dump"))
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test("a SQLite database in a directory group or others may enter is refused, naming the fix")
    func openDirectoryRefused() async throws {
        let directory = try TestDatabases.temporaryDirectory("open")
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o755],
            ofItemAtPath: directory.path
        )
        let path = directory.appendingPathComponent("store.sqlite").path
        let outcome = try await AdminCommandTests.run(
            ["migrate"] + AdminCommandTests.database(.sqlite(path: path))
        )
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("open to group or others (mode 755)"))
        #expect(outcome.stderr.contains("chmod 700"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test(
        "serve --log-format prints one timestamped line per event with exactly one request id",
        arguments: ["json", "text"]
    )
    func logFormat(format: String) async throws {
        let location = try await TestDatabases.make(.sqlite)
        let server = try await ServerProcess(
            location: location,
            quiet: false,
            extra: ["--log-format", format]
        )
        let health = try await PlainHTTP.send(
            "GET",
            server.url.appendingPathComponent("health"),
            headers: ["X-Request-ID": "trace-42"]
        )
        #expect(health.status == 200)
        let stderr = await server.child.stop(with: SIGTERM).outcome.stderr
        let lines = stderr.split(separator: "\n").map(String.init)
        let requestLines = lines.filter { $0.contains("trace-42") }
        #expect(requestLines.count == 1, "\(stderr)")
        for line in lines {
            #expect(
                line.range(
                    of: #"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"#,
                    options: .regularExpression
                ) != nil,
                "\(line)"
            )
            #expect(!line.contains("hb.request.id"))
        }
        let line = try #require(requestLines.first)
        if format == "json" {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            )
            #expect(object["request_id"] as? String == "trace-42")
            #expect(object["message"] as? String == "request")
            #expect(object["level"] as? String == "info")
            #expect(object["status"] as? String == "200")
            for other in lines {
                #expect(
                    (try? JSONSerialization.jsonObject(with: Data(other.utf8))) != nil,
                    "\(other)"
                )
            }
        } else {
            #expect(line.contains(" info request ("))
            #expect(line.components(separatedBy: "trace-42").count == 2)
            #expect(line.contains("request_id: trace-42"))
        }
    }

    @Test("sslmode=verify-full with sslrootcert trusts only that CA and never falls back to plain")
    func verifyFull() async throws {
        let cluster = try await PostgresCluster.get()
        let url = try await cluster.makeDatabase()
        let directory = try TestDatabases.temporaryDirectory("ca")
        let other = directory.appendingPathComponent("ca.pem").path
        let made = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", directory.appendingPathComponent("ca.key").path, "-out", other, "-days",
                "1", "-subj", "/CN=Shopfloor test CA",
            ]
        )
        #expect(made.status == 0, "\(made.stderr)")
        let garbage = directory.appendingPathComponent("garbage.pem").path
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: garbage))
        func migrate(_ query: String, url: String = url) async throws -> ProcessOutcome {
            try await AdminCommandTests.run(
                ["migrate"] + AdminCommandTests.database(.postgres(url: url + "?" + query))
            )
        }
        let missing = try await migrate("sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("sslrootcert '/nonexistent/ca.pem' cannot be read"))
        let notPEM = try await migrate("sslmode=verify-full&sslrootcert=\(garbage)")
        #expect(notPEM.status == 1)
        #expect(notPEM.stderr.contains("holds no PEM CA certificate"))
        let off = try await migrate("sslmode=disable&sslrootcert=\(other)")
        #expect(off.status == 1)
        #expect(off.stderr.contains("needs sslmode=verify-full"))

        // The cluster's own CA: a verified TLS connection, by address and by name.
        let verified = try await migrate("sslmode=verify-full&sslrootcert=\(cluster.caFile)")
        #expect(verified.status == 0, "\(verified.stderr)")
        let byName = url.replacingOccurrences(of: "@127.0.0.1:", with: "@localhost:")
        let named = try await migrate(
            "sslmode=verify-full&sslrootcert=\(cluster.caFile)",
            url: byName
        )
        #expect(named.status == 0, "\(named.stderr)")
        // Another CA: refused, not connected without verification.
        let untrusted = try await migrate("sslmode=verify-full&sslrootcert=\(other)")
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.lowercased().contains("certificate"), "\(untrusted.stderr)")
        // The right CA but a name the certificate does not carry (127.0.0.2): verify-full
        // refuses, verify-ca (no host name check) accepts.
        let otherAddress = url.replacingOccurrences(of: "@127.0.0.1:", with: "@127.0.0.2:")
        let misnamed = try await migrate(
            "sslmode=verify-full&sslrootcert=\(cluster.caFile)",
            url: otherAddress
        )
        #expect(misnamed.status == 1, "\(misnamed.stderr)")
        let caOnly = try await migrate(
            "sslmode=verify-ca&sslrootcert=\(cluster.caFile)",
            url: otherAddress
        )
        #expect(caOnly.status == 0, "\(caOnly.stderr)")

        // A server that declines TLS (answers the SSLRequest with 'N', as one without TLS
        // does): verify-full refuses it rather than going on in plain.
        let plainPeer = try DecliningTLSPeer()
        let plainURL = "postgres://\(PostgresCluster.user)@127.0.0.1:\(plainPeer.port)/x"
        let plain = try await migrate(
            "sslmode=verify-full&sslrootcert=\(cluster.caFile)",
            url: plainURL
        )
        #expect(plain.status == 1)
        #expect(plain.stderr.contains("TLS"), "\(plain.stderr)")
        #expect(plainPeer.startupMessagesSeen == 0, "a startup message was sent in plain")
        #expect(try await migrate("sslmode=disable").status == 0)
    }
}
