import ChildProcesses
import Foundation
import Models
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A listener that records how many bytes each connection sent it and answers nothing: a
/// proxy that should never be used, in this process.
final class RecordingListener: Sendable {
    private final class Counts: Sendable {
        let value = Mutex((connections: 0, bytes: 0))
    }
    private let listener: PeerListener
    private let counts = Counts()

    init() throws {
        let counts = self.counts
        listener = try PeerListener { client in
            counts.value.withLock { $0.connections += 1 }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(client, &buffer, buffer.count, 0)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                counts.value.withLock { $0.bytes += count }
            }
        }
    }

    var port: Int { listener.port }
    var url: String { listener.url }

    /// Connections accepted and bytes received so far.
    var seen: (connections: Int, bytes: Int) { counts.value.withLock { $0 } }
}

/// Issue 26's attacks on the client as real processes: a proxy, a port squatter run as
/// another user, planted links, terminal injection from server data, data left at sign-out.
///
/// One test at a time: `squatterGetsNothing` binds the port of the server it has just stopped,
/// with no second try; a server, listener or connection that a sibling test opens meanwhile
/// could take it (`untrustedCertificate` retries its port because a fixed port collided with a
/// busy run's ephemeral ports).
@Suite("Client trust", .serialized)
struct ClientTrustTests {
    @Test("A loopback server is never reached through a proxy, whatever the proxy variables say")
    func proxyNeverUsedForLoopback() async throws {
        let server = try await StoreServerProcess.scratch("trust-proxy")
        defer { server.discard() }
        let proxy = try RecordingListener()
        let station = try Workstation()
        defer { station.remove() }
        var environment = station.environment
        for name in ["http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"] {
            environment[name] = proxy.url
        }
        environment["no_proxy"] = nil
        environment["NO_PROXY"] = nil
        func run(_ arguments: [String], stdin: Data? = nil) async throws -> ProcessOutcome {
            try await CommandRunner.run(
                CommandRunner.builtBinary("reservations"),
                arguments,
                environment: environment,
                stdin: stdin
            )
        }
        let login = try await run(
            ["login", "--server", server.url, "--user", "demo", "--password-stdin"],
            stdin: Data("shopfloor-demo\n".utf8)
        )
        #expect(login.status == 0, "\(login.stderr)")
        #expect(try await run(["list", "--json"]).status == 0)
        #expect(try await run(["logout"]).status == 0)
        #expect(proxy.seen.connections == 0)
        #expect(proxy.seen.bytes == 0)
    }

    @Test("An https server with an untrusted certificate is refused with exit 1, not offline")
    func untrustedCertificate() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "trust-tls")
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        try await Processes.tool(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
                certificate, "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
            ]
        )
        // A self-signed TLS listener that answers any request (openssl's -www status page), on
        // a port the kernel just had free; another one if something took it meanwhile (a
        // fixed port collided with a busy run's ephemeral ports).
        var started: (ChildProcess, Int)?
        for _ in 0..<5 where started == nil {
            let port = freeLoopbackPort()
            let candidate = try await ChildProcess.start(
                URL(fileURLWithPath: "/usr/bin/openssl"),
                [
                    "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key",
                    key, "-www",
                ],
                stdin: .writer,
                stderr: .discarded
            )
            // "Using default temp DH parameters", then "ACCEPT" once it listens.
            if await candidate.line(startingWith: "ACCEPT", timeout: 30) != nil {
                started = (candidate, port)
            } else {
                _ = await candidate.stop(with: SIGKILL)
            }
        }
        let (server, port) = try #require(started, "openssl s_server did not start")
        defer { server.signal(SIGKILL) }
        let url = "https://127.0.0.1:\(port)"
        let station = try Workstation()
        defer { station.remove() }
        let run = try await station.run(
            ["login", "--server", url, "--user", "demo", "--password-stdin"],
            stdin: Data("shopfloor-demo\n".utf8)
        )
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("did not prove itself"), "\(run.stderr)")
        #expect(run.stderr.contains("certificate"), "\(run.stderr)")
        // Nothing kept to answer with either way: still 1 (untrusted), never 6 (offline).
        let config = try await station.run(["config", "--server", url])
        #expect(config.status == 1, "\(config.stderr)")
    }

    @Test(
        "A port squatter run by another user gets no token: refused before anything is sent",
        .enabled(if: geteuid() == 0, "running the squatter as nobody needs root")
    )
    func squatterGetsNothing() async throws {
        let server = try await StoreServerProcess.scratch("trust-squat")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let port = server.port
        await server.stop()
        // The squatter: an unprivileged user binds the stopped server's port and reports
        // each connection's byte count on stdout.
        let script = """
            import socket, sys
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", \(port))); s.listen(16); print("ready", flush=True)
            while True:
                c, _ = s.accept(); c.settimeout(2); n = 0
                try:
                    while True:
                        d = c.recv(4096)
                        if not d: break
                        n += len(d)
                except Exception: pass
                print("bytes", n, flush=True); c.close()
            """
        let squatter = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                script,
            ]
        )
        try #require(await squatter.nextLine(timeout: 20) == "ready")
        for arguments in [["list"], ["whoami"], ["logout", "--keep-cache"]] {
            let run = try await station.run(arguments)
            #expect(run.stderr.contains("nobody"), "\(arguments): \(run.stderr)")
        }
        let outcome = await squatter.stop(with: SIGKILL)
        let counts = outcome.outcome.stdout.split(separator: "\n").filter { $0.hasPrefix("bytes") }
        #expect(counts.allSatisfy { $0 == "bytes 0" }, "the squatter read: \(counts)")
    }

    @Test(
        "Export and --image-save never write through a link another user planted in /tmp",
        .enabled(if: geteuid() == 0, "planting another user's link needs root")
    )
    func plantedLinks() async throws {
        let sticky = try CommandRunner.temporaryDirectory(prefix: "trust-sticky")
        defer { try? FileManager.default.removeItem(at: sticky) }
        chmod(sticky.path, 0o1777)
        let victim = sticky.appendingPathComponent("authorized_keys")
        try Data("ssh-ed25519 AAAA keep-me\n".utf8).write(to: victim)
        let link = sticky.appendingPathComponent("export.json")
        #expect(symlink(victim.path, link.path) == 0)
        #expect(lchown(link.path, 65534, 65534) == 0)
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "k", "v")
        let export = try await tool.run("export", link.path, "--json")
        #expect(export.status == 1, "\(export.stderr)")
        #expect(export.stderr.contains("refusing to write"), "\(export.stderr)")
        #expect(export.stderr.contains(link.path))
        #expect(try String(contentsOf: victim, encoding: .utf8) == "ssh-ed25519 AAAA keep-me\n")
        // A link the caller owns in the same place is followed as before.
        let own = sticky.appendingPathComponent("own.json")
        let target = sticky.appendingPathComponent("target.json")
        #expect(symlink(target.path, own.path) == 0)
        #expect(try await tool.run("export", own.path, "--json").status == 0)
        #expect(FileManager.default.fileExists(atPath: target.path))
    }

    @Test("Control, bidi and escape sequences in server data never reach the terminal raw")
    func terminalInjection() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "trust-tty")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("s.sqlite")
        let server = try await StoreServerProcess(database: database)
        defer { server.terminate() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let listed = try await station.run(["list", "--date", "today", "--json"])
        try #require(listed.status == 0, "\(listed.stderr)")
        let code = try #require(
            try ModelsJSON.makeDecoder().decode(
                Page<ReservationDetail>.self,
                from: Data(listed.stdout.utf8)
            ).items.first
        ).reservation.confirmationCode.description.replacingOccurrences(of: "-", with: "")
        // Data written before the rules held (straight into the database): an OSC 52
        // clipboard write and a title in the notes, a C1 CSI and a bidi override in the topic.
        let sql = """
            UPDATE reservations SET
              notes = 'line one' || char(10) || 'x' || char(27) || ']52;c;ZWNobyBwd25lZA==' || char(7) || char(27) || ']0;fake' || char(7),
              topic = 'Repair' || char(155) || '2J' || char(8238) || 'evil'
            WHERE code = '\(code)';
            """
        let update = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/sqlite3"),
            [database.path, sql]
        )
        try #require(update.status == 0, "sqlite3: \(update.stderr)")
        // On a terminal (a pseudo-terminal from script(1)): labelled lines and a table.
        for arguments in [["show", code], ["list", "--date", "today"]] {
            let command =
                ([CommandRunner.builtBinary("reservations").path] + arguments)
                .map { "'\($0)'" }.joined(separator: " ")
            let run = try await CommandRunner.run(
                URL(fileURLWithPath: "/usr/bin/script"),
                ["-q", "-e", "-c", command, "/dev/null"],
                environment: station.environment
            )
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            let bytes = Array(run.stdout.utf8)
            #expect(!bytes.contains(0x1B), "\(arguments) printed an ESC")
            #expect(!bytes.contains(0x07), "\(arguments) printed a BEL")
            #expect(!run.stdout.unicodeScalars.contains { $0.value == 0x9B || $0.value == 0x202E })
            #expect(run.stdout.contains("Repair\\x9B2J\\u{202E}evil"), "\(arguments)")
            if arguments[0] == "show" {
                #expect(run.stdout.contains("\\x1B]52;c;"), "\(run.stdout)")
                #expect(run.stdout.contains("line one"))
            }
        }
        // JSON stays data, but C1 and bidi characters are \u escapes.
        let json = try await station.run(["show", code, "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.contains("\\u009B") && json.stdout.contains("\\u202E"))
        #expect(!json.stdout.unicodeScalars.contains { $0.value == 0x9B || $0.value == 0x202E })
    }

    @Test("A barcode holding escape sequences is shown escaped at a terminal, as read in a pipe")
    func scanEscapesAtTerminal() async throws {
        let directory = try CommandRunner.temporaryDirectory(prefix: "trust-scan")
        defer { try? FileManager.default.removeItem(at: directory) }
        let image = directory.appendingPathComponent("osc.png").path
        // An OSC 0 title and a C1 CSI (U+009B) in a QR code.
        let payload = "pwn\u{1B}]0;fake title\u{07}\u{9B}2Jend"
        try await Processes.tool("qrencode", ["-o", image, "-s", "6", "-8", payload])
        let scan = CommandRunner.builtBinary("scan").path
        let terminal = try await CommandRunner.run(
            URL(fileURLWithPath: "/usr/bin/script"),
            ["-q", "-e", "-c", "'\(scan)' --quiet '\(image)'", "/dev/null"]
        )
        #expect(terminal.status == 0, "\(terminal.stdout)")
        let bytes = Array(terminal.stdout.utf8)
        #expect(!bytes.contains(0x1B) && !bytes.contains(0x07), "\(terminal.stdout)")
        #expect(!terminal.stdout.unicodeScalars.contains { $0.value == 0x9B })
        #expect(
            terminal.stdout.contains("QR-Code:pwn\\x1B]0;fake title\\x07"),
            "\(terminal.stdout)"
        )
        // In a pipe the payload is data, byte for byte (zbarimg's form).
        let piped = try await CommandRunner.run(URL(fileURLWithPath: scan), ["--quiet", image])
        #expect(piped.stdout == "QR-Code:\(payload)\n")
    }

    @Test(
        "Sign-out removes every suite app's kept server data and says what; --keep-cache keeps it"
    )
    func signOutRemovesKeptData() async throws {
        let server = try await StoreServerProcess.scratch("trust-logout")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        let container = station.home.appendingPathComponent("shopfloor")
        func keptFiles() -> [String] {
            let enumerator = FileManager.default.enumerator(atPath: container.path)
            var found: [String] = []
            while let name = enumerator?.nextObject() as? String {
                // Entry files: `ab/<32 hex digits>` in a cache or the images.
                if name.split(separator: "/").last?.count == 32 { found.append(name) }
            }
            return found
        }
        for keep in [true, false] {
            try await station.login(server)
            #expect(try await station.run(["list", "--date", "today", "--json"]).status == 0)
            #expect(try await station.run(["search", "a", "--json"]).status == 0)
            #expect(
                try await station.catalog(["prefetch", "--query", "kettle", "--json"]).status == 0
            )
            let before = keptFiles()
            #expect(before.contains { $0.hasPrefix("cache/reservations/") })
            #expect(before.contains { $0.hasPrefix("cache/catalog/") })
            #expect(before.contains { $0.hasPrefix("images/") })
            let logout = try await station.catalog(["logout"] + (keep ? ["--keep-cache"] : []))
            #expect(logout.status == 0, "\(logout.stderr)")
            if keep {
                #expect(logout.stderr.contains("kept the data kept for offline use"))
                #expect(keptFiles().count == before.count)
            } else {
                #expect(
                    logout.stderr.contains("offline copies of reservations"),
                    "\(logout.stderr)"
                )
                #expect(logout.stderr.contains("offline copies of catalog"))
                #expect(logout.stderr.contains("product images"))
                #expect(keptFiles().isEmpty, "left: \(keptFiles())")
            }
        }
    }
}
