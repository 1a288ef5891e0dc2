import ChildProcesses
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `suite-defaults` binary, run as a user runs it, in a fresh SHOPFLOOR_HOME.
final class SuiteDefaultsTool {
    typealias Run = ProcessOutcome

    /// The build products directory holds both this test bundle and the apps.
    static var binary: URL { CommandRunner.builtBinary("suite-defaults") }

    let home: URL

    init() throws {
        home = try CommandRunner.temporaryDirectory(prefix: "suite-defaults-cli")
        chmod(home.path, 0o700)
    }

    deinit { try? FileManager.default.removeItem(at: home) }

    /// The environment the binary runs in: this tool's SHOPFLOOR_HOME, no SHOPFLOOR_SUITE.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SHOPFLOOR_HOME"] = home.path
        environment.removeValue(forKey: "SHOPFLOOR_SUITE")
        return environment
    }

    @discardableResult
    func run(_ arguments: String..., stdin: String? = nil) async throws -> Run {
        try await run(arguments, stdin: stdin)
    }

    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil) async throws -> Run {
        try await CommandRunner.run(
            Self.binary,
            arguments,
            environment: environment,
            stdin: stdin.map { Data($0.utf8) }
        )
    }
}

@Suite("suite-defaults command")
struct SuiteDefaultsCommandTests {
    @Test("the binary is built next to the tests")
    func binaryExists() {
        #expect(FileManager.default.isExecutableFile(atPath: SuiteDefaultsTool.binary.path))
    }

    @Test("a suite never written reads and exports as {} with exit 0")
    func neverWritten() async throws {
        let tool = try SuiteDefaultsTool()
        #expect(try await tool.run("read").stdout == "{}\n")
        let export = try await tool.run("export", "-", "--json")
        #expect(export.status == 0)
        #expect(export.stdout == "{}\n")
    }

    @Test(
        "write then read prints each type as documented",
        arguments: [
            (["-string", "hello world"], "hello world"),
            (["plain"], "plain"),
            (["-int", "-42"], "-42"),
            (["-float", "2.5"], "2.5"),
            (["-bool", "yes"], "1"),
            (["-bool", "false"], "0"),
            (["-date", "2026-11-23T07:00:00Z"], "2026-11-23T07:00:00.000Z"),
            (["-data", "00ff10"], "00ff10"),
            (["-array", "a", "-int", "2"], "[\n  \"a\",\n  2\n]"),
            (["-dict", "k", "-bool", "true"], "{\n  \"k\": true\n}"),
            (["-string", "-looks-like-a-flag"], "-looks-like-a-flag"),
        ]
    )
    func writeAndRead(value: [String], printed: String) async throws {
        let tool = try SuiteDefaultsTool()
        let write = try await tool.run(["write", "key"] + value)
        #expect(write.status == 0, "\(write.stderr)")
        #expect(try await tool.run("read", "key").stdout == printed + "\n")
    }

    @Test(
        "bad input exits with the documented code and names the problem",
        arguments: [
            (["read", "missing"], 3, "missing"),
            (["read-type", "missing"], 3, "missing"),
            (["delete", "missing"], 3, "missing"),
            (["rename", "missing", "x"], 3, "missing"),
            (["write", "k", "-int", "abc"], 64, "'abc' is not an integer"),
            (["write", "k", "-bool", "maybe"], 64, "not a boolean"),
            (["write", "k", "-date", "soon"], 64, "not an ISO 8601 date"),
            (["write", "k", "-data", "xyz"], 64, "not hex data"),
            (["write", "k", "-bogus", "1"], 64, "unknown type flag"),
            (["write", "k"], 64, "needs a value"),
            (["--suite", "../escape", "read"], 64, "invalid suite name"),
            (["increment", "k", "lots"], 64, "not an integer amount"),
        ]
    )
    func badInput(arguments: [String], status: Int32, message: String) async throws {
        let tool = try SuiteDefaultsTool()
        let run = try await tool.run(arguments)
        #expect(run.status == status)
        #expect(run.stderr.contains("error: "))
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test("increment starts a missing key from 0, stores an integer, and read prints it plainly")
    func increment() async throws {
        let tool = try SuiteDefaultsTool()
        #expect(try await tool.run("increment", "n", "800").stdout == "800\n")
        #expect(try await tool.run("read", "n").stdout == "800\n")
        #expect(try await tool.run("read-type", "n").stdout == "Type is integer\n")
        #expect(try await tool.run("increment", "n", "-1").stdout == "799\n")
        try await tool.run("write", "s", "text")
        #expect(try await tool.run("increment", "s").status == 1)
    }

    @Test("export --json gives one flat object that import reads back, in another suite")
    func exportImport() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "when", "-date", "2026-11-23T07:00:00Z")
        try await tool.run("write", "blob", "-data", "0102")
        try await tool.run("write", "n", "-int", "3")
        let json = try await tool.run("export", "-", "--json").stdout
        #expect(json.contains("\"when\": \"2026-11-23T07:00:00.000Z\""))
        #expect(json.contains("\"blob\": \"AQI=\""))
        let plist = try await tool.run("export", "-").stdout
        #expect(plist.contains("<integer>3</integer>"))
        #expect(try await tool.run("--suite", "copy", "import", "-", stdin: plist).status == 0)
        #expect(
            try await tool.run("--suite", "copy", "read-type", "when").stdout == "Type is date\n"
        )
        #expect(try await tool.run("--suite", "copy", "read", "blob").stdout == "0102\n")
        let notDictionary = try await tool.run("import", "-", stdin: "[1, 2]")
        #expect(notDictionary.status == 1)
        #expect(notDictionary.stderr.contains("a suite imports a dictionary"))
        #expect(try await tool.run("domains").stdout == "copy\nshopfloor\n")
    }

    @Test("read, export and find never print a file that is not the defaults store")
    func secretsStayPrivate() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "visible", "yes")
        let container = tool.home.appendingPathComponent("shopfloor")
        let token = container.appendingPathComponent("auth-token")
        try Data("secret-token-value".utf8).write(to: token)
        // A store replaced by a link to the token file is moved aside, not followed.
        let store = container.appendingPathComponent("defaults.store")
        try FileManager.default.removeItem(at: store)
        symlink(token.path, store.path)
        for arguments in [
            ["read"], ["export", "-", "--json"], ["export", "-"], ["find", "secret"],
        ] {
            let run = try await tool.run(arguments)
            #expect(!run.stdout.contains("secret-token-value"), "\(arguments)")
        }
    }

    @Test("watch prints one JSON line per change and exits 130 on SIGINT, 143 on SIGTERM")
    func watch() async throws {
        for (signal, status) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
            let tool = try SuiteDefaultsTool()
            try await tool.run("write", "k", "-int", "1")
            let watcher = try await ChildProcess.start(
                SuiteDefaultsTool.binary,
                ["watch", "k"],
                environment: tool.environment
            )
            // Ready once it watches the container (its inotify descriptor), not after a delay.
            try #require(
                await watcher.waitForDescriptor("anon_inode:inotify"),
                "watch never watched"
            )
            try await tool.run("write", "k", "-int", "2")
            let first = await watcher.nextLine(timeout: 20)
            // Another key changes, then k again: only k's second change may follow.
            try await tool.run("write", "other", "x")
            try await tool.run("write", "k", "-int", "3")
            let second = await watcher.nextLine(timeout: 20)
            let (_, outcome) = await watcher.stop(with: signal)
            #expect(outcome.status == status, "\(outcome.stderr)")
            #expect(
                first?.hasSuffix(#"Z","key":"k","new":2,"old":1,"suite":"shopfloor"}"#) == true
                    && first?.hasPrefix(#"{"at":""#) == true,
                "\(first ?? "no line")"
            )
            #expect(
                second?.hasSuffix(#"Z","key":"k","new":3,"old":2,"suite":"shopfloor"}"#) == true,
                "\(second ?? "no line")"
            )
            #expect(outcome.stdout.isEmpty, "a line after the last change: \(outcome.stdout)")
        }
    }
}
