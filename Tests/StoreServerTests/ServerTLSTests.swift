import ChildProcesses
import Foundation
import StoreServer
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25, point 2 (the server's side): `serve --tls-certificate --tls-key`, TLS 1.2 or later
/// only, no plain listener, and a certificate reloaded on SIGHUP without dropping connections.
/// Clients are `curl` and `openssl s_client` trusting only a private authority made for the test.
@Suite("store-server serves TLS itself", .serialized)
struct ServerTLSTests {
    @Test("A request over TLS is answered, and the certificate verifies against the private CA")
    func requestOverTLS() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let files = try await pki.server("server1", serial: 1001)
        let server = try await TestServer.start(.sqlite, tls: files)
        #expect(server.url.scheme == "https")
        let port = try #require(server.url.port)
        for host in ["127.0.0.1", "localhost"] {
            let seen = try await TLSClient.get(
                "https://\(host):\(port)/health",
                authority: pki.authority
            )
            #expect(seen.status == 0, "\(seen.verbose.suffix(800))")
            #expect(seen.body.contains("\"status\":\"ok\""))
            #expect(seen.subject?.contains("CN=server1") == true)
        }
        // Without the authority the same certificate is not trusted: verification is real.
        let untrusted = try await TLSClient.get(
            "https://127.0.0.1:\(port)/health",
            authority: nil,
            extra: ["--capath", pki.directory.path, "--cacert", "/dev/null"]
        )
        #expect(untrusted.status == 60 || untrusted.status == 77)
        #expect(untrusted.body.isEmpty)
        await server.stop()
    }

    @Test("TLS 1.1 is refused by the server with a protocol alert; TLS 1.2 is accepted")
    func oldProtocolsRefused() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let files = try await pki.server("server1", serial: 1001)
        let server = try await TestServer.start(.sqlite, tls: files)
        let url = server.url.appendingPathComponent("health").absoluteString
        // The client offers TLS 1.1 (its own security level lowered so it really does): the
        // refusal is the server's alert, not the client's own policy.
        let old = try await TLSClient.get(
            url,
            authority: pki.authority,
            extra: ["--tlsv1.1", "--tls-max", "1.1", "--ciphers", "DEFAULT@SECLEVEL=0"]
        )
        #expect(old.status == 35, "\(old.verbose.suffix(800))")
        #expect(old.verbose.contains("alert protocol version"), "\(old.verbose.suffix(800))")
        #expect(old.body.isEmpty)
        let twelve = try await TLSClient.get(
            url,
            authority: pki.authority,
            extra: ["--tlsv1.2", "--tls-max", "1.2"]
        )
        #expect(twelve.status == 0, "\(twelve.verbose.suffix(800))")
        #expect(twelve.body.contains("\"status\":\"ok\""))
        await server.stop()
    }

    @Test("Plain HTTP to the TLS port gets no HTTP answer")
    func noPlainListener() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let files = try await pki.server("server1", serial: 1001)
        let server = try await TestServer.start(.sqlite, tls: files)
        let port = try #require(server.url.port)
        let plain = try await TLSClient.get(
            "http://127.0.0.1:\(port)/health",
            authority: nil,
            extra: ["-i"]
        )
        #expect(plain.status != 0)
        #expect(!plain.body.contains("HTTP/"))
        #expect(!plain.verbose.contains("< HTTP/"))
        await server.stop()
    }

    @Test("Over a connection cap, a TLS client gets the 503 encrypted, not plain bytes")
    func capAnsweredOverTLS() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let files = try await pki.server("server1", serial: 1001)
        let server = try await TestServer.start(
            .sqlite,
            connections: LoadLimiter.Limits(total: 100, perKey: ["address": 1]),
            tls: files
        )
        let port = try #require(server.url.port)
        let held = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", pki.authority,
                "-verify_return_error", "-nocommands", "-ign_eof",
            ],
            stdin: .writer,
            stdout: .pipe,
            stderr: .discarded
        )
        #expect(await held.line(startingWith: "Verify return code: 0", timeout: 30) != nil)
        let refused = try await TLSClient.get(
            server.url.appendingPathComponent("health").absoluteString,
            authority: pki.authority,
            extra: ["-i"]
        )
        #expect(refused.body.hasPrefix("HTTP/1.1 503"), "\(refused.verbose.suffix(800))")
        #expect(refused.body.contains("Retry-After: "))
        held.signal(SIGKILL)
        await server.stop()
    }

    @Test("reloadTLS serves new files to new connections; files that cannot be served keep the old")
    func reloadInProcess() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let (first, second, current) = try await pki.renewal()
        let test = try await TestServer.start(.sqlite, tls: current)
        let url = test.url.appendingPathComponent("health").absoluteString
        func subject() async throws -> String? {
            try await TLSClient.get(url, authority: pki.authority).subject
        }
        #expect(try await subject()?.contains("CN=server1") == true)

        try pki.install(second, as: current)
        #expect(test.server.reloadTLS())
        #expect(try await subject()?.contains("CN=server2") == true)

        // A key that belongs to another certificate.
        try Data(contentsOf: URL(fileURLWithPath: first.key))
            .write(to: URL(fileURLWithPath: current.key))
        #expect(!test.server.reloadTLS())
        #expect(try await subject()?.contains("CN=server2") == true)

        // A certificate file that is not PEM, and one that is gone.
        try pki.install(second, as: current)
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: current.certificate))
        #expect(!test.server.reloadTLS())
        try FileManager.default.removeItem(atPath: current.certificate)
        #expect(!test.server.reloadTLS())
        #expect(try await subject()?.contains("CN=server2") == true)
        await test.stop()
    }

    @Test("SIGHUP to store-server serve: new connections get the new certificate, open ones go on")
    func reloadOnSIGHUP() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let (first, second, current) = try await pki.renewal()
        let log = pki.path("server.log")
        let server = try await ServerProcess(
            location: try await TestDatabases.make(.sqlite),
            quiet: false,
            extra: ["--tls-certificate", current.certificate, "--tls-key", current.key],
            log: log
        )
        defer { server.terminate() }
        #expect(server.url.scheme == "https")
        let port = try #require(server.url.port)
        let url = "https://localhost:\(port)/health"

        // A connection opened before the reload, kept open across it.
        let held = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost",
                "-CAfile", pki.authority, "-verify_return_error", "-nocommands", "-ign_eof",
            ],
            stdin: .writer,
            stdout: .pipe,
            stderr: .discarded
        )
        defer { held.signal(SIGKILL) }
        let request = Data("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        held.write(request)
        #expect(await Self.eventually { Self.answers(held) == 1 }, "\(held.lines.suffix(20))")
        #expect(held.lines.contains { $0.hasPrefix("subject=") && $0.contains("server1") })

        try pki.install(second, as: current)
        server.child.signal(SIGHUP)
        #expect(await Self.eventually { Self.read(log).contains("TLS certificate reloaded") })
        let renewed = try await TLSClient.get(url, authority: pki.authority)
        #expect(renewed.subject?.contains("CN=server2") == true)

        // The connection from before the reload answers a further request.
        held.write(request)
        #expect(await Self.eventually { Self.answers(held) == 2 }, "\(held.lines.suffix(20))")

        // Files that cannot be served: an error in the log, the server goes on with server2.
        try Data(contentsOf: URL(fileURLWithPath: first.key))
            .write(to: URL(fileURLWithPath: current.key))
        server.child.signal(SIGHUP)
        #expect(await Self.eventually { Self.read(log).contains("TLS reload failed") })
        let kept = try await TLSClient.get(url, authority: pki.authority)
        #expect(kept.subject?.contains("CN=server2") == true)
        #expect(server.child.isRunning)
        #expect(await server.stop() == 143)
    }

    @Test("serve refuses half a TLS pair (64) and files it cannot serve (1), naming the file")
    func startupErrors() async throws {
        let pki = try await TestPKI.make()
        defer { pki.remove() }
        let first = try await pki.server("server1", serial: 1001)
        let second = try await pki.server("server2", serial: 1002)
        let database = try TestDatabases.temporaryDirectory("tls-refused")
        defer { try? FileManager.default.removeItem(at: database) }
        let cases: [([String], Int32, String)] = [
            (["--tls-certificate", first.certificate], 64, "--tls-key"),
            (["--tls-key", first.key], 64, "--tls-certificate"),
            (
                ["--tls-certificate", pki.path("missing.crt"), "--tls-key", first.key], 1,
                pki.path("missing.crt")
            ),
            (["--tls-certificate", first.key, "--tls-key", first.key], 1, first.key),
            (
                ["--tls-certificate", first.certificate, "--tls-key", first.certificate], 1,
                "TLS key"
            ),
            (
                ["--tls-certificate", first.certificate, "--tls-key", second.key], 1,
                "does not match"
            ),
        ]
        for (arguments, status, named) in cases {
            let outcome = try await ChildProcess.run(
                ServerProcess.binary,
                [
                    "serve", "--port", "0", "--database",
                    database.appendingPathComponent("s.sqlite").path,
                ] + arguments,
                timeout: 60
            )
            #expect(outcome.status == status, "\(arguments): \(outcome)")
            #expect(outcome.stderr.hasPrefix("error: "), "\(arguments): \(outcome.stderr)")
            #expect(outcome.stderr.contains(named), "\(arguments): \(outcome.stderr)")
            #expect(outcome.stdout.isEmpty)
        }
    }

    /// How many answers `child` (an `openssl s_client`) has printed.
    static func answers(_ child: ChildProcess) -> Int {
        // A body ends without a newline: the next status line may follow it on one line.
        child.lines.joined(separator: "\n").components(separatedBy: "HTTP/1.1 200 OK").count - 1
    }

    static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// Waits (up to 30 s) until `condition` holds.
    static func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }
}
