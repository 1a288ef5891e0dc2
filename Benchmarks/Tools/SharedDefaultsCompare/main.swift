// SharedStore against Foundation's UserDefaults(suiteName:) in one run, with real processes:
// read latency, durable write latency, 8 processes incrementing one key (how many kept),
// cross-process change-notification latency, and kill -9 during writes (corrupt stores).
// Run by Benchmarks/compare/shared-defaults-vs-userdefaults.sh from `make bench`; prints a
// Markdown table. The program re-runs itself as the child processes.
import Foundation
import SharedDefaults

#if canImport(Glibc)
    import Glibc
#endif

enum Kind: String { case shared, ud }

let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path

func nowNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func line(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func format(_ value: Double, _ unit: String) -> String {
    if value.isNaN { return "n/a" }
    if value < 10 { return String(format: "%.2f %@", value, unit) }
    return String(format: "%.1f %@", value, unit)
}

/// A child process of this program, with line-by-line stdout.
final class Child {
    let process = Process()
    let pipe = Pipe()
    var buffer: [UInt8] = []

    init(_ arguments: [String], home: String) throws {
        process.executableURL = URL(fileURLWithPath: selfPath)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home
        environment["SHOPFLOOR_HOME"] = home + "/shopfloor"
        process.environment = environment
        process.standardOutput = pipe
        try process.run()
    }

    func nextLine(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let text = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return text
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var descriptor = pollfd(
                fd: pipe.fileHandleForReading.fileDescriptor,
                events: Int16(POLLIN),
                revents: 0
            )
            guard poll(&descriptor, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(descriptor.fd, &chunk, chunk.count)
            if count <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

// MARK: - Children

func childIncrement(_ kind: Kind, count: Int) throws {
    switch kind {
    case .shared:
        let store = try SharedStore(suite: "bench", refresh: .statEveryRead)
        for _ in 0..<count { try store.increment("counter") }
    case .ud:
        let defaults = UserDefaults(suiteName: "bench")!
        for _ in 0..<count {
            // The best a UserDefaults user can do: reload, add, write through.
            _ = defaults.synchronize()
            defaults.set(defaults.integer(forKey: "counter") + 1, forKey: "counter")
            _ = defaults.synchronize()
        }
    }
}

func childWatch(_ kind: Kind) async throws {
    switch kind {
    case .shared:
        let store = try SharedStore(suite: "bench")
        let changes = store.changes(forKey: "ping")
        line("ready")
        for await change in changes {
            if case .int(let sent)? = change.newValue { line("\(Int(nowNanos()) - sent)") }
        }
    case .ud:
        // UserDefaults has no cross-process notification; the nearest is its in-process
        // didChangeNotification, with a reload (synchronize) polled every millisecond.
        let defaults = UserDefaults(suiteName: "bench")!
        var last = defaults.integer(forKey: "ping")
        line("ready")
        while true {
            _ = defaults.synchronize()
            let value = defaults.integer(forKey: "ping")
            if value != last {
                last = value
                line("\(Int(nowNanos()) - value)")
            }
            usleep(1000)
        }
    }
}

func childAcked(_ kind: Kind) throws {
    var value = 0
    switch kind {
    case .shared:
        let store = try SharedStore(suite: "bench", refresh: .statEveryRead)
        value = store.int(forKey: "n") ?? 0
        while true {
            value += 1
            try store.set(value, forKey: "n")
            line("\(value)")
        }
    case .ud:
        let defaults = UserDefaults(suiteName: "bench")!
        value = defaults.integer(forKey: "n")
        while true {
            value += 1
            defaults.set(value, forKey: "n")
            _ = defaults.synchronize()
            line("\(value)")
        }
    }
}

// MARK: - Measurements

struct Results {
    var readNanos = 0.0
    var writeP50 = 0.0
    var writeP99 = 0.0
    var kept = 0
    var expected = 0
    var notifyP50 = Double.nan
    var notifyP99 = Double.nan
    var notified = 0
    var notifyTrials = 0
    var corrupt = 0
    var lostAcked = 0
    var killTrials = 0
}

/// The integers in UserDefaults' file for suite "bench" under `home`, or nil when it is
/// missing or not a property list.
func userDefaultsFile(home: String) -> [String: Int]? {
    guard let data = try? Data(contentsOf: URL(fileURLWithPath: home + "/.config/bench.plist")),
        let plist = try? PropertyListSerialization.propertyList(from: data, format: nil)
            as? [String: Any]
    else { return nil }
    return plist.compactMapValues { ($0 as? NSNumber)?.intValue }
}

func freshHome(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
        "sd-compare-\(getpid())-\(name)"
    ).path
    try? FileManager.default.removeItem(atPath: path)
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    chmod(path, 0o700)
    return path
}

func measure(_ kind: Kind) throws -> Results {
    var results = Results()
    let home = freshHome(kind.rawValue)
    setenv("HOME", home, 1)
    setenv("SHOPFLOOR_HOME", home + "/shopfloor", 1)

    // Read latency from memory: 1,000,000 reads, best of 5 batches.
    let reads = 1_000_000
    var best = Double.infinity
    switch kind {
    case .shared:
        let store = try SharedStore(suite: "bench")
        try store.set("https://store.example", forKey: "serverURL")
        for _ in 0..<5 {
            let start = nowNanos()
            var sink = 0
            for _ in 0..<reads { sink &+= store.string(forKey: "serverURL")?.utf8.count ?? 0 }
            best = min(best, Double(nowNanos() - start) / Double(reads))
            precondition(sink > 0)
        }
    case .ud:
        let defaults = UserDefaults(suiteName: "bench")!
        defaults.set("https://store.example", forKey: "serverURL")
        for _ in 0..<5 {
            let start = nowNanos()
            var sink = 0
            for _ in 0..<reads { sink &+= defaults.string(forKey: "serverURL")?.utf8.count ?? 0 }
            best = min(best, Double(nowNanos() - start) / Double(reads))
            precondition(sink > 0)
        }
    }
    results.readNanos = best

    // Durable write: 500 writes of a growing counter.
    var writes: [Double] = []
    switch kind {
    case .shared:
        let store = try SharedStore(suite: "bench")
        for index in 0..<500 {
            let start = nowNanos()
            try store.set(index, forKey: "w")
            writes.append(Double(nowNanos() - start) / 1e6)
        }
    case .ud:
        let defaults = UserDefaults(suiteName: "bench")!
        for index in 0..<500 {
            let start = nowNanos()
            defaults.set(index, forKey: "w")
            _ = defaults.synchronize()
            writes.append(Double(nowNanos() - start) / 1e6)
        }
    }
    results.writeP50 = percentile(writes, 0.5)
    results.writeP99 = percentile(writes, 0.99)

    // 8 processes x 500 increments of one key.
    let processes = 8
    let each = 500
    let incrementers = try (0..<processes).map { _ in
        try Child(["child-increment", kind.rawValue, String(each)], home: home)
    }
    for child in incrementers { child.process.waitUntilExit() }
    results.expected = processes * each
    switch kind {
    case .shared:
        results.kept =
            try SharedStore(suite: "bench", refresh: .statEveryRead).int(forKey: "counter") ?? 0
    case .ud:
        // Read the file itself: this process's own UserDefaults may serve its cached copy.
        results.kept = userDefaultsFile(home: home)?["counter"] ?? 0
    }

    // Cross-process notification: the watcher prints how long after the write began it saw it.
    let watcher = try Child(["child-watch", kind.rawValue], home: home)
    guard watcher.nextLine(timeout: 10) == "ready" else { fatalError("watcher did not start") }
    usleep(100_000)
    let trials = kind == .shared ? 200 : 20
    var latencies: [Double] = []
    let writerStore = kind == .shared ? try SharedStore(suite: "bench") : nil
    let writerDefaults = kind == .ud ? UserDefaults(suiteName: "bench")! : nil
    for _ in 0..<trials {
        let sent = Int(nowNanos())
        if let writerStore {
            try writerStore.set(sent, forKey: "ping")
        } else if let writerDefaults {
            writerDefaults.set(sent, forKey: "ping")
            _ = writerDefaults.synchronize()
        }
        if let text = watcher.nextLine(timeout: 1), let nanos = Double(text) {
            latencies.append(nanos / 1e6)
        }
        usleep(2000)
    }
    watcher.kill9()
    results.notifyTrials = trials
    results.notified = latencies.count
    results.notifyP50 = percentile(latencies, 0.5)
    results.notifyP99 = percentile(latencies, 0.99)

    // kill -9 during writes: a store must stay readable and keep the last acknowledged write.
    let killHome = freshHome(kind.rawValue + "-kill")
    setenv("HOME", killHome, 1)
    setenv("SHOPFLOOR_HOME", killHome + "/shopfloor", 1)
    results.killTrials = 60
    for _ in 0..<results.killTrials {
        let child = try Child(["child-acked", kind.rawValue], home: killHome)
        var acked = 0
        for _ in 0..<Int.random(in: 1...4) {
            guard let text = child.nextLine(timeout: 10), let value = Int(text) else { break }
            acked = value
        }
        usleep(UInt32.random(in: 0...3000))
        child.kill9()
        while let text = child.nextLine(timeout: 0.05), let value = Int(text) {
            acked = max(acked, value)
        }
        switch kind {
        case .shared:
            let before =
                (try? FileManager.default.contentsOfDirectory(atPath: killHome + "/shopfloor/bench"))
                ?? []
            let store = try SharedStore(suite: "bench", refresh: .statEveryRead)
            let after =
                (try? FileManager.default.contentsOfDirectory(atPath: killHome + "/shopfloor/bench"))
                ?? []
            if after.filter({ $0.contains("corrupt") }).count
                > before.filter({ $0.contains("corrupt") }).count
            {
                results.corrupt += 1
            }
            if (store.int(forKey: "n") ?? 0) < acked { results.lostAcked += 1 }
        case .ud:
            let path = killHome + "/.config/bench.plist"
            let parsed = userDefaultsFile(home: killHome)
            if FileManager.default.fileExists(atPath: path) && parsed == nil {
                results.corrupt += 1
                try? FileManager.default.removeItem(atPath: path)
            }
            if (parsed?["n"] ?? 0) < acked { results.lostAcked += 1 }
        }
    }
    return results
}

func report() throws {
    let shared = try measure(.shared)
    let defaults = try measure(.ud)
    func ratio(_ a: Double, _ b: Double) -> String {
        guard a.isFinite, b.isFinite, a > 0 else { return "" }
        return String(format: " (%.1fx)", b / a)
    }
    line("")
    line("SharedStore vs UserDefaults(suiteName:) on this machine (same run)")
    line("")
    line("| measure | target | SharedStore | UserDefaults |")
    line("|---|---|---|---|")
    line(
        "| read from memory | <= 200 ns | \(format(shared.readNanos, "ns")) | \(format(defaults.readNanos, "ns"))\(ratio(shared.readNanos, defaults.readNanos)) |"
    )
    line(
        "| durable write p50 | <= 2 ms | \(format(shared.writeP50, "ms")) | \(format(defaults.writeP50, "ms")) (set + synchronize, not fsynced) |"
    )
    line(
        "| durable write p99 | | \(format(shared.writeP99, "ms")) | \(format(defaults.writeP99, "ms")) |"
    )
    line(
        "| 8 processes x 500 increments kept | 100% | \(shared.kept)/\(shared.expected) (\(100 * shared.kept / max(shared.expected, 1))%) | \(defaults.kept)/\(defaults.expected) (\(100 * defaults.kept / max(defaults.expected, 1))%) |"
    )
    line(
        "| change seen by another process p50 | <= 5 ms | \(format(shared.notifyP50, "ms")) | \(defaults.notified == 0 ? "never (no cross-process notification)" : format(defaults.notifyP50, "ms") + " (1 ms polling)") |"
    )
    line(
        "| change seen by another process p99 | <= 50 ms | \(format(shared.notifyP99, "ms")) | \(defaults.notified == 0 ? "never" : format(defaults.notifyP99, "ms")) |"
    )
    line(
        "| changes seen / made | | \(shared.notified)/\(shared.notifyTrials) | \(defaults.notified)/\(defaults.notifyTrials) |"
    )
    line(
        "| kill -9 during writes: corrupt stores | 0 | \(shared.corrupt)/\(shared.killTrials) | \(defaults.corrupt)/\(defaults.killTrials) |"
    )
    line(
        "| kill -9 during writes: acknowledged write lost | 0 | \(shared.lostAcked)/\(shared.killTrials) | \(defaults.lostAcked)/\(defaults.killTrials) |"
    )
    line("")
    line("Notification latency counts from the start of the writer's durable commit. UserDefaults'")
    line("watcher polls synchronize() every 1 ms, since it has no cross-process notification.")
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "child-increment":
        try childIncrement(Kind(rawValue: arguments[1])!, count: Int(arguments[2])!)
    case "child-watch": try await childWatch(Kind(rawValue: arguments[1])!)
    case "child-acked": try childAcked(Kind(rawValue: arguments[1])!)
    default: try report()
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
