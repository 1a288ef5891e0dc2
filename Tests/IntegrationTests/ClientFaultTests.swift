import ChildProcesses
import Foundation
import Models
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A peer on 127.0.0.1 that answers every connection with `reply` (then, unless `endless` is
/// empty, writes `endless` again and again until the client goes away): a broken proxy's
/// page, or a hostile server that never stops sending.
final class HostileServer: Sendable {
    private let listener: PeerListener

    init(port wanted: Int = 0, reply: String, endless: String = "", pause: useconds_t = 0)
        throws
    {
        let head = Array(reply.utf8)
        let unit = Array(endless.utf8)
        listener = try PeerListener(port: wanted) { client in
            let request = PeerListener.read(client) {
                $0.suffix(4).elementsEqual([13, 10, 13, 10])
            }
            guard request.suffix(4).elementsEqual([13, 10, 13, 10]),
                PeerListener.write(client, head)
            else { return }
            while !unit.isEmpty, PeerListener.write(client, unit) {
                if pause > 0 { usleep(pause) }
            }
        }
    }

    var port: Int { listener.port }
    var url: String { listener.url }
}

/// The client apps as real processes against hostile peers, blocked output, a full disk and
/// damaged files (issue 30's client points).
///
/// One test at a time: `stopWhileOutputBlocked` requires a stopped command to exit within a
/// second (`seconds < 1`) and `hostilePeers` a `--deadline 2` login to end within 3 s
/// (`seconds < 3`); the other tests start a store-server each, which could stretch those times.
@Suite("Client apps under faults", .serialized)
struct ClientFaultTests {
    /// Whether one of the process's threads sleeps in `pipe_write` (blocked on a full pipe).
    static func blockedInWrite(_ pid: pid_t) -> Bool {
        let tasks =
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            // `pipe_write`, or `anon_pipe_write` on newer kernels.
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/wchan", encoding: .utf8))?
                .hasSuffix("pipe_write") == true
        }
    }

    @Test(
        "A stop signal ends a command within a second while its stdout is blocked on a full pipe",
        arguments: [SIGTERM, SIGINT]
    )
    func stopWhileOutputBlocked(signal: Int32) async throws {
        let tool = try SuiteDefaultsTool()
        let big = String(repeating: "x", count: 1 << 20)
        #expect(try await tool.run("import", "-", stdin: "{\"big\": \"\(big)\"}").status == 0)
        // The reader never reads: the 1 MiB value fills the 64 KiB pipe and the write blocks.
        // (ChildProcess's own pipes are read to their end, so the pipe is this test's.)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let reader = try await ChildProcess.start(
            SuiteDefaultsTool.binary,
            ["read", "big"],
            environment: tool.environment,
            stdout: .descriptor(ends[1])
        )
        close(ends[1])
        let pid = reader.processIdentifier
        let end = Date(timeIntervalSinceNow: 20)
        while !Self.blockedInWrite(pid), Date() < end {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(Self.blockedInWrite(pid), "the write never blocked")
        let (seconds, outcome) = await reader.stop(with: signal, timeout: 10)
        #expect(!outcome.signalled, "\(outcome)")
        #expect(outcome.status == (signal == SIGTERM ? 143 : 130))
        #expect(seconds < 1, "took \(seconds) s")
    }

    @Test(
        "A hostile peer (endless 100 Continue, endless trailers, trickled headers) never outlasts --deadline"
    )
    func hostilePeers() async throws {
        let station = try Workstation()
        defer { station.remove() }
        let peers = [
            (try HostileServer(reply: "", endless: "HTTP/1.1 100 Continue\r\n\r\n"), Int32(1)),
            (
                try HostileServer(
                    reply: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n0\r\n",
                    endless: "X-Trailer: again\r\n"
                ), 1
            ),
            (try HostileServer(reply: "HTTP/1.1 200 OK\r\n", endless: "X", pause: 50_000), 6),
        ]
        for (peer, status) in peers {
            // Sign-in asks for the client configuration first: the peer answers that.
            // The command's own lifetime, clocked beside it: what the user waits.
            let (run, seconds) = try await station.selfTimed(
                [
                    "login", "--server", peer.url, "--user", "demo", "--password-stdin",
                    "--deadline", "2", "--connect-timeout", "1",
                ],
                stdin: Data("shopfloor-demo\n".utf8)
            )
            #expect(run.status == status, "\(peer.url): \(run.stderr)")
            #expect(seconds < 3, "\(peer.url) took \(seconds) s (seen after \(run.seconds) s)")
            #expect(run.stderr.hasPrefix("error: "))
        }
    }

    @Test("A damaged token file exits 77 (sign in again), not 1")
    func damagedTokenFile() async throws {
        let server = try await StoreServerProcess.scratch("damaged-token")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let token = station.home.appendingPathComponent("shopfloor/auth-token.json")
        try Data("{\"accessToken\": tru".utf8).write(to: token)
        let run = try await station.run(["list", "--server", server.url])
        #expect(run.status == 77, "\(run.stderr)")
        #expect(run.stderr.contains("damaged"))
        #expect(run.stderr.contains("reservations login"))
    }

    @Test("A 404 page from a broken proxy in the server's place keeps the kept product")
    func proxyPageKeepsProduct() async throws {
        let server = try await StoreServerProcess.scratch("proxy-404")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let product = try #require(try await demoProducts(station, query: "e", limit: 5).first)
        let gtin = product.gtin.gtin14
        #expect(try await station.catalog(["show", gtin, "--json"]).status == 0)
        let port = server.port
        await server.stop()
        let proxy = try HostileServer(
            port: port,
            reply:
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 22\r\nConnection: close\r\n\r\n<html>Not Found</html>"
        )
        for _ in 0..<2 {
            let run = try await station.catalog(["show", gtin, "--json", "--server", proxy.url])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("not a store-server answer"), "\(run.stderr)")
            #expect(try decode(Product.self, run).gtin == product.gtin)
        }
    }

    @Test(
        "prefetch on a full disk counts images not stored as failed and exits 1 naming the reason",
        .enabled(if: geteuid() == 0, "mounting a small tmpfs needs root")
    )
    func prefetchFullDisk() async throws {
        let server = try await StoreServerProcess.scratch("full-disk")
        defer { server.discard() }
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let images = station.home.appendingPathComponent("shopfloor/images")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        let mount = try await CommandRunner.run(
            URL(fileURLWithPath: "/bin/mount"),
            ["-t", "tmpfs", "-o", "size=96k,mode=0700", "tmpfs", images.path]
        )
        try #require(mount.status == 0, "mount: \(mount.stderr)")
        // Lazily, as `umount -l` does: nothing can be awaited in a defer.
        defer { _ = umount2(images.path, Int32(MNT_DETACH)) }
        let run = try await station.catalog(["prefetch", "--query", "a", "--json"])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("No space left on device"), "\(run.stderr)")
        #expect(run.stderr.contains("could not be stored"), "\(run.stderr)")
        struct Summary: Decodable {
            var total: Int
            var loaded: Int
            var alreadyCached: Int
            var failed: Int
        }
        let summary = try JSONDecoder().decode(Summary.self, from: Data(run.stdout.utf8))
        #expect(summary.failed > 0)
        #expect(summary.loaded + summary.alreadyCached + summary.failed == summary.total)
        // What is reported loaded is there: a second run finds those already cached.
        let again = try await station.catalog(["prefetch", "--query", "a", "--json"])
        let second = try JSONDecoder().decode(Summary.self, from: Data(again.stdout.utf8))
        #expect(second.alreadyCached >= summary.loaded)
    }

    @Test(
        "Damaged image-index slots are repaired, not a crash; FIFOs in entries' places are misses"
    )
    func damagedImageCache() async throws {
        let server = try await StoreServerProcess.scratch("damaged-index")
        defer { server.discard() }
        let directory = server.directory
        let station = try Workstation()
        defer { station.remove() }
        try await station.login(server)
        let first = try await station.catalog(["prefetch", "--query", "e", "--json"])
        try #require(first.status == 0, "\(first.stderr)")
        let images = station.home.appendingPathComponent("shopfloor/images")
        // Garbage over every slot (the header, which has a checksum, stays whole).
        let index = try FileHandle(forUpdating: images.appendingPathComponent("index"))
        let size = try index.seekToEnd()
        try index.seek(toOffset: 4096)
        var generator = SystemRandomNumberGenerator()
        let garbage = (0..<(Int(size) - 4096)).map { _ in
            UInt8.random(in: 0...255, using: &generator)
        }
        try index.write(contentsOf: Data(garbage))
        try index.close()
        let repaired = try await station.catalog(["prefetch", "--query", "a", "--json"])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(![132, 133, 134, 139].contains(repaired.status))

        // Every entry file replaced by a FIFO: each is a miss (loaded again), never a hang.
        var replaced = 0
        for folder in try FileManager.default.contentsOfDirectory(atPath: images.path)
        where folder.count == 2 {
            let path = images.appendingPathComponent(folder).path
            for name in try FileManager.default.contentsOfDirectory(atPath: path) {
                let entry = path + "/" + name
                unlink(entry)
                #expect(mkfifo(entry, 0o600) == 0)
                replaced += 1
            }
        }
        try #require(replaced > 0)
        let product = try #require(try await demoProducts(station, query: "e", limit: 3).first)
        let saved = directory.appendingPathComponent("saved.png").path
        let (show, seconds) = try await station.timedCatalog([
            "show", product.gtin.gtin14, "--image-save", saved, "--deadline", "10",
        ])
        #expect(show.status == 0, "\(show.stderr)")
        #expect(seconds < 10)
        #expect(FileManager.default.fileExists(atPath: saved))
    }
}
