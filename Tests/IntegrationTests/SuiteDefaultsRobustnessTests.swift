import ChildProcesses
import Foundation
import SharedDefaults
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension SuiteDefaultsTool {
    /// Runs the binary with hostile standard streams (see ``Processes``).
    func outcome(
        _ arguments: [String],
        stdin: Data? = nil,
        stdout: ChildProcess.Output = .pipe,
        shellRedirect: String? = nil
    ) async throws -> ProcessOutcome {
        try await Processes.run(
            Self.binary,
            arguments,
            environment: environment,
            stdin: stdin,
            stdout: stdout,
            shellRedirect: shellRedirect
        )
    }

    var container: URL { home.appendingPathComponent("shopfloor") }
    var storeFile: URL { container.appendingPathComponent("defaults.store") }

    /// The suite as `export --json` gives it, to compare before and after a refused command.
    func snapshot() async throws -> String { try await run("export", "-", "--json").stdout }
}

/// `suite-defaults` against the faults of issue 17: values past the limits, inputs holding
/// nothing, full disks and closed pipes, special files, held locks, read-only file systems,
/// removed containers, damaged stores, extreme option values.
@Suite("suite-defaults when the world misbehaves", .serialized)
struct SuiteDefaultsRobustnessTests {
    static func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
    }

    @Test(
        "a value nested to the limit is stored and read back; one level more is refused with 64 before anything is written"
    )
    func nestingLimit() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "keep", "me")
        let atLimit = try await tool.outcome(["write", "deep", "-json", Self.nested(100)])
        #expect(atLimit.status == 0, "\(atLimit)")
        let read = try await tool.outcome(["read", "deep", "--json"])
        #expect(read.status == 0)
        #expect(read.stdout.filter { $0 == "[" }.count == 100)
        let before = try await tool.snapshot()
        for arguments in [
            ["write", "deep", "-json", Self.nested(101)],
            ["write", "deep", "-json", Self.nested(130)],
            ["write", "deep", "-array", "-json", Self.nested(100)],
        ] {
            let past = try await tool.outcome(arguments)
            #expect(past.status == 64, "\(past)")
            #expect(
                past.stderr.hasPrefix("error: ") && past.stderr.contains("100 levels"),
                "\(past)"
            )
        }
        #expect(try await tool.snapshot() == before)
        #expect(try await !tool.outcome(["read"]).stderr.contains("corrupt"))
    }

    @Test("an import nested past the limit is refused with 64 and changes nothing")
    func importNestingLimit() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "keep", "me")
        let before = try await tool.snapshot()
        let deep = try await tool.outcome(
            ["import", "-"],
            stdin: Data("{\"a\": \(Self.nested(101))}".utf8)
        )
        #expect(deep.status == 64, "\(deep)")
        #expect(try await tool.snapshot() == before)
        let fine = try await tool.outcome(
            ["import", "-"],
            stdin: Data("{\"a\": \(Self.nested(100))}".utf8)
        )
        #expect(fine.status == 0, "\(fine)")
    }

    @Test(
        "import of input that holds no settings, or is cut short, refuses with 1 and changes nothing",
        arguments: [
            "", "\n", " \t\r\n", "{}", "{ }",
            "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict/></plist>",
            "{\"a\": 1, \"b\": ",
            "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>a</key>",
            "a = 1 b = 2",
        ]
    )
    func importNothing(input: String) async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "keep", "me")
        let before = try await tool.snapshot()
        let outcome = try await tool.outcome(["import", "-"], stdin: Data(input.utf8))
        #expect(outcome.status == 1, "\(outcome)")
        #expect(outcome.stderr.hasPrefix("error: "), "\(outcome)")
        // Foundation's old-style property-list parser prints its own lines; it is never used.
        #expect(!outcome.stderr.contains("CFPropertyList"), "\(outcome)")
        #expect(outcome.stderr.split(separator: "\n").count == 1, "\(outcome)")
        #expect(try await tool.snapshot() == before)
    }

    @Test(
        "a write to a full disk or a closed stdout fails with 1 and a message, a closed pipe with 141",
        arguments: [
            ["read", "k"], ["read"], ["read-type", "k"], ["export", "-", "--json"],
            ["export", "-"],
            ["domains", "--json"], ["find", "k", "--json"], ["--version"], ["--help"],
        ]
    )
    func failedOutput(arguments: [String]) async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "k", "-int", "1")
        let full = try await tool.outcome(arguments, stdout: .path("/dev/full"))
        #expect(full.status == 1 && !full.signalled, "\(full)")
        #expect(full.stderr.contains("error: cannot write to standard output"), "\(full)")
        let closed = try await tool.outcome(arguments, shellRedirect: ">&-")
        #expect(closed.status == 1 && !closed.signalled, "\(closed)")
        let pipe = try await tool.outcome(arguments, stdout: .closedPipe)
        #expect(pipe.status == 141 && !pipe.signalled, "\(pipe)")
    }

    @Test("increment that cannot print its result says on stderr what it stored, and read gives it")
    func incrementOutputFails() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "n", "-int", "41")
        let full = try await tool.outcome(["increment", "n"], stdout: .path("/dev/full"))
        #expect(full.status == 1, "\(full)")
        #expect(
            full.stderr.contains("'n' in suite 'shopfloor' is now 42 (the increment was stored)")
        )
        let pipe = try await tool.outcome(["increment", "n"], stdout: .closedPipe)
        #expect(pipe.status == 141, "\(pipe)")
        #expect(pipe.stderr.contains("is now 43"))
        #expect(try await tool.run("read", "n").stdout == "43\n")
    }

    @Test(
        "export writes through a link, refuses a FIFO, a directory and a device, and replaces a file atomically"
    )
    func exportTargets() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "k", "-int", "7")
        let dir = try CommandRunner.temporaryDirectory(prefix: "export-targets")
        defer { try? FileManager.default.removeItem(at: dir) }

        // A regular file: replaced by rename (a new inode), keeping its mode.
        let file = dir.appendingPathComponent("suite.json")
        try Data("old".utf8).write(to: file)
        chmod(file.path, 0o640)
        var before = stat()
        stat(file.path, &before)
        #expect(try await tool.outcome(["export", file.path, "--json"]).status == 0)
        var after = stat()
        stat(file.path, &after)
        #expect(after.st_ino != before.st_ino)
        #expect(after.st_mode & 0o777 == 0o640)
        #expect(try String(contentsOf: file, encoding: .utf8).contains("\"k\": 7"))

        // A link: the file it names is written, the link stays a link.
        let link = dir.appendingPathComponent("link.json")
        #expect(symlink(file.path, link.path) == 0)
        try await tool.run("write", "k", "-int", "8")
        #expect(try await tool.outcome(["export", link.path, "--json"]).status == 0)
        var linkInfo = stat()
        lstat(link.path, &linkInfo)
        #expect(linkInfo.st_mode & S_IFMT == S_IFLNK)
        #expect(try String(contentsOf: file, encoding: .utf8).contains("\"k\": 8"))
        // A dangling link: the file is created where it points.
        let dangling = dir.appendingPathComponent("dangling.json")
        let target = dir.appendingPathComponent("created.json")
        #expect(symlink(target.path, dangling.path) == 0)
        #expect(try await tool.outcome(["export", dangling.path, "--json"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: target.path))

        // Special files are refused, named, and left as they were (no hang on the FIFO).
        let fifo = dir.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        for (path, kind) in [
            (fifo.path, "a FIFO"), (dir.path, "a directory"), ("/dev/null", "a character device"),
        ] {
            let refused = try await tool.outcome(["export", path, "--json"])
            #expect(refused.status == 1, "\(path): \(refused)")
            #expect(refused.stderr.contains("\(path) is \(kind)"), "\(refused)")
        }
        var fifoInfo = stat()
        lstat(fifo.path, &fifoInfo)
        #expect(fifoInfo.st_mode & S_IFMT == S_IFIFO)
        // No temporary file is left behind.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dir.path).allSatisfy {
                !$0.hasSuffix(".tmp")
            }
        )
    }

    @Test("a writer waiting on a lock another process holds says so, then gives up at its timeout")
    func heldLock() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "k", "before")
        let lockFile = tool.container.appendingPathComponent("defaults.lock").path
        let holder = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/flock"),
            ["--no-fork", lockFile, "-c", "echo locked; exec sleep 60"]
        )
        #expect(await holder.nextLine() == "locked")
        let waiting = try await tool.outcome(["--lock-timeout", "1.5", "write", "k", "after"])
        _ = await holder.stop(with: SIGKILL)
        #expect(waiting.status == 1, "\(waiting)")
        let lines = waiting.stderr.split(separator: "\n")
        #expect(
            lines.first?.hasPrefix(
                "warning: waiting for another process to release the suite's lock"
            ) == true,
            "\(waiting)"
        )
        #expect(
            lines.first?.contains("holder: process \(holder.processIdentifier)") == true,
            "\(waiting)"
        )
        #expect(
            lines.last?.hasPrefix("error: another process held the suite's lock") == true,
            "\(waiting)"
        )
        #expect(lines.last?.contains("more than 1.5 s; nothing was written") == true, "\(waiting)")
        #expect(try await tool.run("read", "k").stdout == "before\n")
        // Once released, the next writer goes through at once.
        #expect(try await tool.outcome(["--lock-timeout", "1", "write", "k", "after"]).status == 0)
    }

    /// Whether this machine lets an unprivileged mount namespace bind-mount read-only.
    static func canMountReadOnly() async -> Bool {
        guard
            let outcome = try? await Processes.run(
                URL(fileURLWithPath: "/usr/bin/unshare"),
                [
                    "--user", "--map-root-user", "--mount", "sh", "-c",
                    "mount --bind /tmp /tmp && mount -o remount,ro,bind /tmp /tmp",
                ]
            )
        else { return false }
        return outcome.status == 0
    }

    @Test(
        "on a read-only file system a damaged store reads as its intact backup, not as an empty suite",
        .enabled("needs unshare with user and mount namespaces") {
            await SuiteDefaultsRobustnessTests.canMountReadOnly()
        }
    )
    func readOnlyFileSystem() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "a", "first")
        try await tool.run("write", "a", "second")  // the backup now holds "first"
        try Data("garbage".utf8).write(to: tool.storeFile)
        let home = tool.home.path
        let outcome = try await Processes.run(
            URL(fileURLWithPath: "/usr/bin/unshare"),
            [
                "--user", "--map-root-user", "--mount", "sh", "-c",
                "mount --bind \"$1\" \"$1\" && mount -o remount,ro,bind \"$1\" \"$1\" && exec \"$0\" read a",
                SuiteDefaultsTool.binary.path, home,
            ],
            environment: tool.environment
        )
        #expect(outcome.status == 0, "\(outcome)")
        #expect(outcome.stdout == "first\n", "\(outcome)")
        #expect(
            outcome.stderr.contains(
                "error: the store is corrupt and cannot be repaired; reading its backup unchanged"
            ),
            "\(outcome)"
        )
        // Nothing on the read-only file system changed.
        #expect(try String(contentsOf: tool.storeFile, encoding: .utf8) == "garbage")
    }

    @Test(
        "watch reports and exits 1 when its suite's container is removed, instead of going silent"
    )
    func watchContainerRemoved() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "k", "-int", "1")
        let watch = try await ChildProcess.start(
            SuiteDefaultsTool.binary,
            ["watch", "k"],
            environment: tool.environment
        )
        // The first change seen proves the watch is running.
        var line: String?
        repeat {
            try await tool.run("write", "k", "-int", "\(Int.random(in: 2...1_000_000))")
            line = await watch.nextLine(timeout: 0.5)
        } while line == nil
        try FileManager.default.removeItem(at: tool.container)
        let outcome = await watch.wait(timeout: 30)
        #expect(outcome.status == 1 && !outcome.signalled, "\(outcome)")
        #expect(outcome.stderr.contains("error: the container of suite 'shopfloor'"), "\(outcome)")
        #expect(outcome.stderr.contains("was removed; stopped watching"), "\(outcome)")
    }

    @Test("the packages' log lines carry the suite's prefixes")
    func logPrefixes() async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "a", "1")
        try await tool.run("write", "a", "2")
        try Data("garbage".utf8).write(to: tool.storeFile)
        let outcome = try await tool.outcome(["read", "a"])
        #expect(outcome.stdout == "1\n")
        let lines = outcome.stderr.split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(
            lines.allSatisfy { $0.hasPrefix("error: ") || $0.hasPrefix("warning: ") },
            "\(outcome)"
        )
        #expect(outcome.stderr.contains("error: store is corrupt or unreadable"), "\(outcome)")
    }

    @Test(
        "numeric options and values with extreme values work or are refused with 64, never a trap",
        arguments: [
            "-1", "0", "1", "1.5", "86400", "86401", "1e300", "-1e300", "inf", "nan",
            "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "-9223372036854775809", "99999999999999999999999999", "", "x", "0x10",
        ]
    )
    func extremeValues(value: String) async throws {
        let tool = try SuiteDefaultsTool()
        try await tool.run("write", "n", "-int", "9223372036854775806")
        try await tool.run("write", "m", "-int", "-9223372036854775807")
        let runs: [[String]] = [
            ["--lock-timeout", value, "read"],
            ["write", "--lock-timeout", value, "k", "v"],
            ["increment", "n", value], ["increment", "m", value], ["increment", "new", value],
            ["write", "i", "-int", value], ["write", "f", "-float", value],
            ["write", "d", "-date", value], ["write", "b", "-bool", value],
            ["write", "j", "-json", value], ["write", "a", "-array", "-int", value],
        ]
        for arguments in runs {
            let outcome = try await tool.outcome(arguments)
            #expect(!outcome.isCrash, "\(arguments): \(outcome)")
            #expect([0, 1, 64].contains(outcome.status), "\(arguments): \(outcome)")
            if outcome.status != 0 {
                #expect(outcome.stderr.hasPrefix("error: "), "\(arguments): \(outcome)")
            }
        }
        // Every acknowledged write reads back.
        #expect(try await tool.outcome(["export", "-", "--json"]).status == 0)
        #expect(try await !tool.outcome(["read"]).stderr.contains("corrupt"))
    }

    @Test(
        "a store forged with checksums that hold but hostile fields is moved aside and recovered, never a trap"
    )
    func forgedStores() async throws {
        var generator = SeededGenerator(seed: 17)
        let tool = try SuiteDefaultsTool()
        try await tool.run(
            "write",
            "a",
            "-array",
            "x",
            "-int",
            "2",
            "-date",
            "2026-11-23T07:00:00Z"
        )
        try await tool.run("write", "b", "-dict", "k", "-data", "00ff")
        let valid = [UInt8](try Data(contentsOf: tool.storeFile))
        var recovered = 0
        for trial in 0..<40 {
            var bytes = valid
            switch trial % 4 {
            case 0:
                // The generation at its maximum: every commit after it used to trap.
                bytes.replaceSubrange(8..<16, with: [UInt8](repeating: 0xFF, count: 8))
            case 1:
                // Payload bytes changed, checksums recomputed: the value parser meets it.
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    let at = Int.random(in: 32..<bytes.count, using: &generator)
                    bytes[at] = UInt8.random(in: 0...255, using: &generator)
                }
            case 2:
                // A count or length set huge.
                let at = Int.random(in: 33..<(bytes.count - 4), using: &generator)
                bytes.replaceSubrange(at..<(at + 4), with: [0xFF, 0xFF, 0xFF, 0x7F])
            default:
                // Cut short, lengths kept consistent.
                bytes.removeLast(Int.random(in: 1..<(bytes.count - 33), using: &generator))
            }
            let payload = bytes[32...]
            let length = UInt64(payload.count)
            bytes.replaceSubrange(
                16..<24,
                with: withUnsafeBytes(of: length.littleEndian) { Array($0) }
            )
            bytes.replaceSubrange(
                24..<28,
                with: withUnsafeBytes(of: CRC32.checksum(payload).littleEndian) { Array($0) }
            )
            bytes.replaceSubrange(
                28..<32,
                with: withUnsafeBytes(of: CRC32.checksum(bytes[0..<28]).littleEndian) { Array($0) }
            )
            try Data(bytes).write(to: tool.storeFile)
            let read = try await tool.outcome(["read"])
            #expect(!read.isCrash && read.status == 0, "trial \(trial): \(read)")
            let write = try await tool.outcome(["write", "c", "-int", "\(trial)"])
            #expect(!write.isCrash && write.status == 0, "trial \(trial): \(write)")
            #expect(try await tool.run("read", "c").stdout == "\(trial)\n", "trial \(trial)")
            if read.stderr.contains("corrupt") { recovered += 1 }
        }
        // Most forgeries are caught as damage (some payload changes still decode).
        #expect(recovered >= 20)
    }
}

/// A small deterministic generator for the forged stores.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
