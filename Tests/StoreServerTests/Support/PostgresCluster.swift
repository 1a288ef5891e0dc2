import ChildProcesses
import Foundation
import Synchronization
import TestSupport
import Testing

/// A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary directory, `pg_ctl
/// start` on a free loopback port (as the `postgres` system user when the tests run as root),
/// one database per test, and an immediate stop plus removal of the directory when the
/// process ends. The cluster listens on 127.0.0.1 and 127.0.0.2 and offers TLS with a
/// certificate for `localhost` and 127.0.0.1 (not 127.0.0.2) signed by a throwaway CA
/// (``caFile``): clients choose plain or TLS, as against a real server.
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
        // The owner's pid in the name: a later process removes the cluster of one that was
        // killed before its exit handler ran (``sweepOrphans()``).
        directory = Self.clusterParent.appendingPathComponent(
            "\(Self.namePrefix)\(getpid())-\(UUID().uuidString.prefix(8))"
        )
        port = freeLoopbackPort()
    }

    /// Where clusters go: memory (/dev/shm) where there is one, else the temporary directory.
    /// Every test's `CREATE DATABASE … TEMPLATE` makes about a thousand files; on ext4 their
    /// inode allocation alone was 7 % of the shared test process's CPU time.
    static var clusterParent: URL {
        var status = statvfs()
        let shm = "/dev/shm"
        if access(shm, W_OK | X_OK) == 0, statvfs(shm, &status) == 0,
            UInt64(status.f_bavail) * UInt64(status.f_frsize) > 4 << 30
        {
            return URL(fileURLWithPath: shm)
        }
        return FileManager.default.temporaryDirectory
    }

    private var dataDirectory: String { directory.appendingPathComponent("data").path }

    /// The PEM certificate of the CA that signed the cluster's TLS certificate.
    var caFile: String { directory.appendingPathComponent("ca.pem").path }

    /// Makes the throwaway CA and the server's certificate and key (0600) in the cluster's
    /// directory.
    private func makeCertificates() async throws {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let extensions = path("server.ext")
        try Data("subjectAltName=DNS:localhost,IP:127.0.0.1\n".utf8).write(
            to: URL(fileURLWithPath: extensions)
        )
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try await run(
            "/usr/bin/openssl",
            ["req", "-x509"] + curve + [
                "-keyout", path("ca.key"), "-out", caFile, "-days", "2", "-subj",
                "/CN=Shopfloor test cluster CA",
            ],
            asPostgres: false
        )
        try await run(
            "/usr/bin/openssl",
            ["req"] + curve + [
                "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost",
            ],
            asPostgres: false
        )
        try await run(
            "/usr/bin/openssl",
            [
                "x509", "-req", "-in", path("server.csr"), "-CA", caFile, "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path("server.crt"), "-days", "2", "-extfile", extensions,
            ],
            asPostgres: false
        )
        chmod(path("server.key"), 0o600)
    }

    private func start() async throws {
        Self.sweepOrphans()
        do {
            try FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true
            )
            try await makeCertificates()
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
            // Clients from all of 127/8 (the second listen address, 127.0.0.2, too).
            let hba = try FileHandle(
                forWritingTo: URL(fileURLWithPath: dataDirectory + "/pg_hba.conf")
            )
            try hba.seekToEnd()
            try hba.write(contentsOf: Data("host all all 127.0.0.0/8 trust\n".utf8))
            try hba.close()
            try await run(
                binDirectory.appendingPathComponent("pg_ctl").path,
                [
                    "-D", dataDirectory, "-w", "-t", "60", "-l",
                    directory.appendingPathComponent("log").path, "-o",
                    "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1,127.0.0.2 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c ssl=on -c ssl_cert_file=\(directory.path)/server.crt -c ssl_key_file=\(directory.path)/server.key",
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
        stopPostmaster(of: cluster.directory)
        try? FileManager.default.removeItem(at: cluster.directory)
    }

    static let namePrefix = "shopfloor-pg-"

    /// Stops and removes the clusters of test processes that no longer exist: a process
    /// killed with SIGKILL (a CI timeout, an out-of-memory kill) never runs
    /// ``stopShared()``, and its postmaster, a daemon, would keep running and holding its
    /// files (about 300 MB, in memory under /dev/shm) until the machine restarts. A cluster
    /// whose owner is alive, or whose name carries no owner, is left alone.
    /// - Parameter parents: where clusters are made (by default both possible places).
    static func sweepOrphans(in parents: Set<String>? = nil) {
        let parents =
            parents ?? [clusterParent.path, FileManager.default.temporaryDirectory.path]
        for parent in parents {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
            for name in names where name.hasPrefix(namePrefix) {
                let owner = name.dropFirst(namePrefix.count).split(separator: "-").first
                guard let owner, let pid = pid_t(owner), pid > 0, pid != getpid() else { continue }
                // ESRCH: no such process. EPERM means one exists (another user's): keep it.
                guard kill(pid, 0) != 0, errno == ESRCH else { continue }
                let directory = URL(fileURLWithPath: parent).appendingPathComponent(name)
                stopPostmaster(of: directory)
                try? FileManager.default.removeItem(at: directory)
            }
        }
    }

    /// Sends SIGQUIT (an immediate stop) to the postmaster of the cluster in `directory`, if
    /// the pid its `postmaster.pid` names is a postgres process serving that directory, and
    /// waits (up to 10 s) until it is gone: it is no child of this process.
    private static func stopPostmaster(of directory: URL) {
        let data = directory.appendingPathComponent("data").path
        let pidFile = data + "/postmaster.pid"
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = text.split(separator: "\n").first.flatMap({ pid_t($0) }), pid > 0
        else { return }
        // A pid reused by another process since is not ours to stop.
        let cmdline = URL(fileURLWithPath: "/proc/\(pid)/cmdline")
        let arguments =
            (try? Data(contentsOf: cmdline)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        guard arguments.contains("postgres"), arguments.contains(data) else { return }
        kill(pid, SIGQUIT)
        for _ in 0..<1_000 where kill(pid, 0) == 0 { usleep(10_000) }
    }

    /// A new database, empty or (with `template`) a copy of that database; its `postgres://`
    /// URL. One statement through one psql: `createdb` ran under `runuser` (two more processes)
    /// and, before a copy, made a database from template1 only for it to be dropped.
    func makeDatabase(template: String? = nil) async throws -> String {
        let name =
            "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await psql("CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? ""))
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

}

/// Why the test cluster could not be used.
struct PostgresClusterError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
