import Foundation
import Synchronization
import Testing

/// A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary directory, `pg_ctl
/// start` on a free loopback port (as the `postgres` system user when the tests run as root),
/// one database per test, and `pg_ctl stop` plus removal of the directory when the process
/// ends.
final class PostgresCluster: Sendable {
    let directory: URL
    let port: Int
    let binDirectory: URL
    let runAsPostgres: Bool
    static let user = "shopfloor"

    private static let shared = Mutex<Result<PostgresCluster, PostgresClusterError>?>(nil)

    /// The process's cluster, started on first use.
    static func get() throws -> PostgresCluster {
        try shared.withLock { state in
            if let state { return try state.get() }
            let result = Result { () throws(PostgresClusterError) in try PostgresCluster() }
            state = result
            if case .success(let cluster) = result {
                let stop: @convention(c) () -> Void = { PostgresCluster.stopShared() }
                atexit(stop)
                _ = cluster
            }
            return try result.get()
        }
    }

    static func stopShared() {
        let cluster = shared.withLock { state -> PostgresCluster? in
            if case .success(let cluster)? = state { return cluster }
            return nil
        }
        cluster?.stop()
    }

    init() throws(PostgresClusterError) {
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
        do {
            try FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true
            )
            if runAsPostgres {
                try run(
                    "/bin/chown",
                    ["-R", "postgres:postgres", directory.path],
                    asPostgres: false
                )
            }
            let data = directory.appendingPathComponent("data").path
            try run(
                bin.appendingPathComponent("initdb").path,
                [
                    "-D", data, "-U", Self.user, "--auth=trust", "--no-sync", "-E", "UTF8",
                    "--locale=C",
                ]
            )
            try run(
                bin.appendingPathComponent("pg_ctl").path,
                [
                    "-D", data, "-w", "-t", "60", "-l",
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
    }

    /// A new empty database; its `postgres://` URL.
    func makeDatabase() throws -> String {
        let name =
            "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try run(
            binDirectory.appendingPathComponent("createdb").path,
            ["-h", "127.0.0.1", "-p", String(port), "-U", Self.user, name]
        )
        return "postgres://\(Self.user)@127.0.0.1:\(port)/\(name)"
    }

    func stop() {
        _ = try? run(
            binDirectory.appendingPathComponent("pg_ctl").path,
            ["-D", directory.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"]
        )
        try? FileManager.default.removeItem(at: directory)
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String], asPostgres: Bool? = nil) throws
        -> String
    {
        let argv =
            (asPostgres ?? runAsPostgres)
            ? ["/usr/sbin/runuser", "-u", "postgres", "--", tool] + arguments : [tool] + arguments
        let (status, text) = try Spawn.run(argv)
        guard status == 0 else {
            throw PostgresClusterError(
                "\((tool as NSString).lastPathComponent) failed (\(status)): \(text.suffix(800))"
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

/// `posix_spawn` and `waitpid`, output to a temporary file: Foundation's `Process` can miss
/// the exit of a command that leaves a daemon behind (`pg_ctl start`).
enum Spawn {
    static func run(_ argv: [String]) throws -> (Int32, String) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            "spawn-\(UUID().uuidString)"
        ).path
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(
            &actions,
            1,
            outputPath,
            O_WRONLY | O_CREAT | O_TRUNC,
            0o644
        )
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid: pid_t = 0
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        let spawned = posix_spawnp(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else {
            throw PostgresClusterError(
                "cannot start \(argv[0]): \(String(cString: strerror(spawned)))"
            )
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = (status & 0x7F) == 0
        return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), text)
    }
}
