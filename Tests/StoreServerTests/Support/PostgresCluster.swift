import ChildProcesses
import Foundation
import Synchronization
import Testing

/// A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary directory, `pg_ctl
/// start` on a free loopback port (as the `postgres` system user when the tests run as root),
/// one database per test, and an immediate stop plus removal of the directory when the
/// process ends.
final class PostgresCluster: Sendable {
    let directory: URL
    let port: Int
    let binDirectory: URL
    let runAsPostgres: Bool
    static let user = "shopfloor"

    /// The process's cluster, started by the first test that asks.
    private static let shared = Task<PostgresCluster, any Error> {
        let cluster = try PostgresCluster()
        try await cluster.start()
        return cluster
    }

    /// The process's cluster, started on first use.
    static func get() async throws -> PostgresCluster {
        try await shared.value
    }

    private init() throws(PostgresClusterError) {
        guard let bin = Self.findBinDirectory() else {
            throw PostgresClusterError(
                "PostgreSQL's initdb was not found under /usr/lib/postgresql (apt-get install postgresql)"
            )
        }
        binDirectory = bin
        runAsPostgres = getuid() == 0
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shopfloor-pg-\(UUID().uuidString.prefix(8))"
        )
        port = Self.freePort()
    }

    private var dataDirectory: String { directory.appendingPathComponent("data").path }

    private func start() async throws {
        do {
            try FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true
            )
            if runAsPostgres {
                try await run(
                    "/bin/chown",
                    ["-R", "postgres:postgres", directory.path],
                    asPostgres: false
                )
            }
            try await run(
                binDirectory.appendingPathComponent("initdb").path,
                [
                    "-D", dataDirectory, "-U", Self.user, "--auth=trust", "--no-sync", "-E", "UTF8",
                    "--locale=C",
                ]
            )
            try await run(
                binDirectory.appendingPathComponent("pg_ctl").path,
                [
                    "-D", dataDirectory, "-w", "-t", "60", "-l",
                    directory.appendingPathComponent("log").path, "-o",
                    "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                    "start",
                ]
            )
        } catch let error as PostgresClusterError {
            throw error
        } catch {
            throw PostgresClusterError("could not start PostgreSQL: \(error)")
        }
        // Stopped when the test process exits, even after a failure.
        atexit { PostgresCluster.stopShared() }
        Self.started.withLock { $0 = self }
    }

    private static let started = Mutex<PostgresCluster?>(nil)

    /// Stops the cluster at once, as `pg_ctl stop -m immediate` does (SIGQUIT to the
    /// postmaster), and removes its files: at exit, where nothing can be awaited.
    static func stopShared() {
        guard let cluster = started.withLock({ $0 }) else { return }
        let pidFile = cluster.directory.appendingPathComponent("data/postmaster.pid").path
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = text.split(separator: "\n").first.flatMap({ pid_t($0) })
        {
            kill(pid, SIGQUIT)
            // The postmaster is no child of this process: wait (up to 10 s) until it is gone.
            for _ in 0..<1_000 where kill(pid, 0) == 0 { usleep(10_000) }
        }
        try? FileManager.default.removeItem(at: cluster.directory)
    }

    /// A new empty database; its `postgres://` URL.
    func makeDatabase() async throws -> String {
        let name =
            "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await run(
            binDirectory.appendingPathComponent("createdb").path,
            ["-h", "127.0.0.1", "-p", String(port), "-U", Self.user, name]
        )
        return "postgres://\(Self.user)@127.0.0.1:\(port)/\(name)"
    }

    /// Runs a PostgreSQL tool (as the `postgres` user when the tests run as root), its output
    /// to a file: `pg_ctl start` leaves a server behind that would hold a pipe open.
    @discardableResult
    private func run(_ tool: String, _ arguments: [String], asPostgres: Bool? = nil) async throws
        -> String
    {
        let argv =
            (asPostgres ?? runAsPostgres)
            ? ["/usr/sbin/runuser", "-u", "postgres", "--", tool] + arguments : [tool] + arguments
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "postgres-tool-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: output) }
        let outcome = try await ChildProcess.run(
            URL(fileURLWithPath: argv[0]),
            Array(argv.dropFirst()),
            stdout: .path(output.path),
            stderr: .path(output.path),
            timeout: 120
        )
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard outcome.status == 0, !outcome.signalled else {
            throw PostgresClusterError(
                "\((tool as NSString).lastPathComponent) failed (\(outcome.status)): \(text.suffix(800))"
            )
        }
        return text
    }

    static func findBinDirectory() -> URL? {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let bin = root.appendingPathComponent(version).appendingPathComponent("bin")
            if FileManager.default.isExecutableFile(
                atPath: bin.appendingPathComponent("initdb").path
            ) {
                return bin
            }
        }
        return nil
    }

    /// A free TCP port on 127.0.0.1 (bound and released).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Why the test cluster could not be used.
struct PostgresClusterError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
