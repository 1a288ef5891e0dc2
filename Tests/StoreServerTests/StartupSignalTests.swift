import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Every app installs its stop-signal handlers before any other code of the program runs
/// (CStartup's pre-initialiser, in every executable that links it): a SIGTERM that arrives
/// while the program is still starting ends it with exit 143, never by the signal's default
/// action.
///
/// The signal is sent at the first sign of life of the program: the moment the process catches
/// any signal at all (in a debug build the Swift runtime's crash handlers come next, a few
/// milliseconds before `main`; an app that installed its handlers only in `main` dies here).
/// Earlier than that the process is still inside the dynamic loader, where no program can
/// catch anything; with the release build's static runtime that is about a millisecond.
@Suite("every app exits 143 on a SIGTERM right after it starts", .serialized)
struct StartupSignalTests {
    /// Each app with a command that waits (for stdin, or for requests), so the signal always
    /// arrives while it runs.
    static func commands(home: String) -> [(String, [String])] {
        [
            ("scan", ["-"]),
            ("suite-defaults", ["import", "-"]),
            (
                "reservations",
                ["login", "--user", "demo", "--password-stdin", "--server", "http://127.0.0.1:9"]
            ),
            (
                "catalog",
                ["login", "--user", "demo", "--password-stdin", "--server", "http://127.0.0.1:9"]
            ),
            (
                "store-server",
                ["serve", "--port", "0", "--quiet", "--database", home + "/server.sqlite"]
            ),
        ]
    }

    static let runs = 20

    @Test(
        "scan, suite-defaults, reservations, catalog and store-server: SIGTERM at their first sign of life exits 143"
    )
    func earlySigterm() throws {
        let home = try TestDatabases.temporaryDirectory("startup").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        let directory = ServerProcess.binary.deletingLastPathComponent()
        for (app, arguments) in Self.commands(home: home) {
            let binary = directory.appendingPathComponent(app).path
            try #require(
                FileManager.default.isExecutableFile(atPath: binary),
                "\(app) is not built"
            )
            var outcomes: [String: Int] = [:]
            for _ in 0..<Self.runs {
                outcomes[try Self.spawnAndTerminate(binary, arguments, home: home), default: 0] += 1
            }
            #expect(outcomes == ["exit 143": Self.runs], "\(app): \(outcomes)")
        }
    }

    /// Starts `binary` as a shell would (signals unblocked and at their defaults) with stdin a
    /// pipe kept open, sends SIGTERM as soon as the process catches any signal, and tells how
    /// it ended: `exit N` or `signal N`.
    static func spawnAndTerminate(_ binary: String, _ arguments: [String], home: String) throws
        -> String
    {
        var input: [Int32] = [0, 0]
        guard pipe(&input) == 0 else { throw POSIXError(.EMFILE) }
        defer { close(input[1]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_addclose(&actions, input[0])
        posix_spawn_file_actions_addclose(&actions, input[1])
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // The test runner's threads block signals; a shell's child starts with none blocked.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([binary] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = ["SHOPFLOOR_HOME=\(home)", "PATH=/usr/bin:/bin", "NO_COLOR=1"]
        let environment: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
        defer { environment.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, binary, &actions, &attributes, argv, environment)
        close(input[0])
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        while caughtSignals(pid) == 0 {}
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7F
        return signal == 0 ? "exit \((status >> 8) & 0xFF)" : "signal \(signal)"
    }

    /// The `SigCgt` mask of process `pid` (the signals it has handlers for); nil once it is gone.
    static func caughtSignals(_ pid: pid_t) -> UInt64? {
        let fd = open("/proc/\(pid)/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") })
        else {
            return nil
        }
        return UInt64(
            line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces),
            radix: 16
        )
    }
}
