import ChildProcesses
import Foundation
import SharedDefaults
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// How many commits each of the 16 contending processes makes: a few dozen in `make test`
/// (the same code paths: 16 real processes contending for the lock, the read-modify-write
/// under it, the whole-file commits), the full 24,000 commits with `SHOPFLOOR_STRESS=1`
/// (`make stress`), which takes about four minutes of fsyncs.
enum StressSize {
    static let full = ProcessInfo.processInfo.environment["SHOPFLOOR_STRESS"] == "1"
    /// Increments per process: 1,000 under stress, else 60.
    static let increments = full ? 1_000 : 60
    /// Distinct keys per process: 500 under stress, else 30.
    static let distinctKeys = full ? 500 : 30
}

/// Real child processes (the stress tool) sharing one suite with each other and the test.
///
/// One test at a time: `concurrentIncrements` and `concurrentDistinctKeys` each start 16
/// processes contending for a suite's lock, and `killDuringWrites` 150 in turn; the watching and
/// lock tests give a child 10 s to answer (`nextLine(timeout: 10)`), which that load could use up.
@Suite("Many processes, one suite", .serialized)
struct ProcessTests {
    @Test("the stress tool is built next to the tests")
    func toolExists() {
        #expect(
            FileManager.default.isExecutableFile(atPath: stressToolURL.path),
            "\(stressToolURL.path)"
        )
    }

    @Test("16 processes incrementing one key at once lose no increment")
    func concurrentIncrements() async throws {
        let root = try TemporaryRoot()
        var children: [ChildProcess] = []
        for _ in 0..<16 {
            children.append(
                try await stressTool(
                    ["increment", "test", "counter", "\(StressSize.increments)"],
                    root: root
                )
            )
        }
        for child in children { #expect(await child.wait(timeout: 600).status == 0) }
        let store = try root.store(refresh: .statEveryRead)
        #expect(store.int(forKey: "counter") == 16 * StressSize.increments)
        #expect(try !root.files(in: "test").contains { $0.contains("corrupt") })
    }

    @Test("16 processes setting distinct keys at once keep every key")
    func concurrentDistinctKeys() async throws {
        let root = try TemporaryRoot()
        let count = StressSize.distinctKeys
        var children: [ChildProcess] = []
        for index in 0..<16 {
            children.append(
                try await stressTool(["distinct", "test", "p\(index)", "\(count)"], root: root)
            )
        }
        for child in children { #expect(await child.wait(timeout: 600).status == 0) }
        let values = try root.store(refresh: .statEveryRead).storedValues()
        #expect(values.count == 16 * count)
        for process in 0..<16 {
            for index in 0..<count { #expect(values["p\(process)-\(index)"] == .int(index)) }
        }
    }

    @Test("150 kill -9 during writes leave a valid store holding every acknowledged write")
    func killDuringWrites() async throws {
        let root = try TemporaryRoot()
        var generator = SystemRandomNumberGenerator()
        var trials = 0
        for trial in 0..<150 {
            let child = try await stressTool(["acked-writes", "test", "n"], root: root)
            // Let it acknowledge a few writes, then kill it somewhere inside the next ones.
            var lastAcked = 0
            let wanted = Int.random(in: 1...4, using: &generator)
            for _ in 0..<wanted {
                guard let line = await child.nextLine(timeout: 10), let value = Int(line) else {
                    break
                }
                lastAcked = value
            }
            try await Task.sleep(for: .microseconds(Int.random(in: 0...3000, using: &generator)))
            // The lines it wrote before it died, which no nextLine took.
            let rest = await child.stop(with: SIGKILL).outcome.stdout
            for line in rest.split(separator: "\n") {
                if let value = Int(line) { lastAcked = max(lastAcked, value) }
            }

            let log = LogCollector()
            let store = try root.store(refresh: .statEveryRead, logger: log.logger)
            let stored = store.int(forKey: "n") ?? 0
            #expect(
                stored >= lastAcked,
                "trial \(trial): stored \(stored) < acknowledged \(lastAcked)"
            )
            #expect(
                stored <= lastAcked + 1,
                "trial \(trial): stored \(stored), acknowledged \(lastAcked)"
            )
            #expect(log.entries.isEmpty, "trial \(trial): \(log.entries.map(\.1))")
            trials += 1
        }
        #expect(trials == 150)
        #expect(try !root.files(in: "test").contains { $0.contains("corrupt") })
    }

    @Test("a watching process sees this process's write")
    func otherProcessSeesWrite() async throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        let watcher = try await stressTool(["watch", "test", "k"], root: root)
        #expect(await watcher.nextLine(timeout: 10) == "ready")
        try store.set(41, forKey: "k")
        try store.set(42, forKey: "other")
        try store.set(43, forKey: "k")
        let first = try #require(await watcher.nextLine(timeout: 10))
        #expect(first.hasPrefix("41 ") || first.hasPrefix("43 "))
        if first.hasPrefix("41 ") {
            #expect(await watcher.nextLine(timeout: 10)?.hasPrefix("43 ") == true)
        }
        _ = await watcher.stop(with: SIGKILL)
    }

    @Test("this process observes another process's write with old and new values")
    func seesOtherProcessWrite() async throws {
        let root = try TemporaryRoot()
        let store = try root.store()
        try store.set(1, forKey: "k")
        let changes = store.changes(forKey: "k")
        let writer = try await stressTool(["set", "test", "k", "7"], root: root)
        #expect(await writer.wait().status == 0)
        let change = try #require(await first(of: changes))
        #expect(change.oldValue == 1)
        #expect(change.newValue == 7)
        #expect(store.int(forKey: "k") == 7)
    }

    @Test("a lock held by a killed process does not block the next writer")
    func deadLockHolder() async throws {
        let root = try TemporaryRoot()
        let store = try root.store(refresh: .statEveryRead)
        try store.set(0, forKey: "n")
        // A process killed at any moment, even holding the lock, releases it with its death:
        // killed once it is committing (its first increment is stored), not before it starts.
        let child = try await stressTool(["increment", "test", "n", "1000000"], root: root)
        #expect(await eventually { (store.int(forKey: "n") ?? 0) > 0 })
        _ = await child.stop(with: SIGKILL)
        let before = store.int(forKey: "n") ?? 0
        #expect(try store.increment("n") > before)
    }

    @Test(
        "a process stopped (SIGTSTP) inside a commit stops only once it has released the suite's lock: another process writes meanwhile"
    )
    func stopDeferredPastTheLock() async throws {
        let root = try TemporaryRoot()
        let store = try root.store(refresh: .statEveryRead)
        let holder = try await stressTool(["hold", "test", "held"], root: root, input: true)
        let pid = holder.processIdentifier
        defer {
            holder.signal(SIGCONT)
            holder.finishInput()
        }
        try #require(await holder.nextLine(timeout: 10) == "locked")
        #expect(!(try fileLocks(of: pid)).isEmpty, "the holder has the suite's lock")
        // Ctrl-Z in the middle of the commit: deferred until the lock is released.
        holder.signal(SIGTSTP)
        holder.write(Data("go\n".utf8))
        try #require(await holder.waitUntilStopped(), "the holder exited instead of stopping")
        #expect(try fileLocks(of: pid).isEmpty, "stopped holding a lock")
        // While it is stopped, another process takes the lock and commits.
        let writer = try await stressTool(["set", "test", "other", "5"], root: root)
        let written = await writer.wait(timeout: 20)
        #expect(!written.timedOut && written.status == 0, "the writer waited for the stopped one")
        #expect(store.int(forKey: "other") == 5)
        #expect(store.int(forKey: "held") == 1, "the stopped process's commit is complete")
        // Continued, it carries on where it stopped.
        holder.signal(SIGCONT)
        #expect(await holder.nextLine(timeout: 10) == "released")
        #expect(await holder.wait().status == 0)
    }
}
