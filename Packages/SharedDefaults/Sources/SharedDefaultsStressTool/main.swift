// A second (third, sixteenth...) process for SharedDefaults' tests and benchmark: it loops
// in-process so a test can run thousands of commits without thousands of process launches.
// The suite's root comes from SHOPFLOOR_HOME, as for every suite tool.
//
//   SharedDefaultsStressTool increment SUITE KEY COUNT      COUNT increments of KEY
//   SharedDefaultsStressTool distinct SUITE PREFIX COUNT    sets PREFIX-0 ... PREFIX-(COUNT-1)
//   SharedDefaultsStressTool acked-writes SUITE KEY         sets KEY to 1, 2, 3... forever,
//                                                           printing each value once durable
//   SharedDefaultsStressTool set SUITE KEY INT              sets KEY to INT
//   SharedDefaultsStressTool timed-writes SUITE COUNT stat|notify   prints write latency
//   SharedDefaultsStressTool watch SUITE KEY                prints "ready", then one line
//                                                           "<new value> <now µs>" per change
//   SharedDefaultsStressTool hold SUITE KEY                 in one commit: prints "locked",
//                                                           reads a line from stdin, sets KEY
//                                                           to 1; then prints "released"
import Foundation
import Logging
import SharedDefaults

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("SharedDefaultsStressTool: \(message)\n".utf8))
    exit(1)
}

func line(_ text: String) {
    // Unbuffered: the parent reads each line as soon as it is printed, and a `kill -9` must
    // not lose a line for a write that was already acknowledged.
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func nowMicros() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return now.tv_sec * 1_000_000 + now.tv_nsec / 1000
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else { fail("usage: MODE SUITE ...") }
let mode = arguments[0]
let suite = arguments[1]
var logger = Logger(label: "stress-tool")
logger.logLevel = .error

do {
    switch mode {
    case "increment":
        guard arguments.count == 4, let count = Int(arguments[3]) else {
            fail("increment SUITE KEY COUNT")
        }
        let store = try SharedStore(suite: suite, refresh: .statEveryRead, logger: logger)
        for _ in 0..<count { try store.increment(arguments[2]) }
    case "distinct":
        guard arguments.count == 4, let count = Int(arguments[3]) else {
            fail("distinct SUITE PREFIX COUNT")
        }
        let store = try SharedStore(suite: suite, refresh: .statEveryRead, logger: logger)
        for index in 0..<count { try store.set(index, forKey: "\(arguments[2])-\(index)") }
    case "acked-writes":
        guard arguments.count == 3 else { fail("acked-writes SUITE KEY") }
        let store = try SharedStore(suite: suite, refresh: .statEveryRead, logger: logger)
        var value = store.int(forKey: arguments[2]) ?? 0
        while true {
            value += 1
            try store.set(value, forKey: arguments[2])
            line(String(value))
        }
    case "timed-writes":
        guard arguments.count == 4, let count = Int(arguments[2]) else {
            fail("timed-writes SUITE COUNT stat|notify")
        }
        let store = try SharedStore(
            suite: suite,
            refresh: arguments[3] == "stat" ? .statEveryRead : .notifications,
            logger: logger
        )
        var times: [Int] = []
        for index in 0..<count {
            let start = nowMicros()
            try store.set(index, forKey: "timed")
            times.append(nowMicros() - start)
        }
        times.sort()
        line(
            "p50 \(times[count / 2]) µs, p90 \(times[count * 9 / 10]) µs, p99 \(times[count * 99 / 100]) µs"
        )
    case "set":
        guard arguments.count == 4, let value = Int(arguments[3]) else { fail("set SUITE KEY INT") }
        let store = try SharedStore(suite: suite, refresh: .statEveryRead, logger: logger)
        try store.set(value, forKey: arguments[2])
    case "watch":
        guard arguments.count == 3 else { fail("watch SUITE KEY") }
        let store = try SharedStore(suite: suite, logger: logger)
        let changes = store.changes(forKey: arguments[2])
        line("ready")
        for await change in changes {
            let text = change.newValue.map { $0.jsonText() } ?? "null"
            line("\(text) \(nowMicros())")
        }
    case "hold":
        guard arguments.count == 3 else { fail("hold SUITE KEY") }
        let store = try SharedStore(suite: suite, refresh: .statEveryRead, logger: logger)
        try store.update { values in
            line("locked")
            _ = readLine()
            values[arguments[2]] = .int(1)
        }
        line("released")
    default:
        fail("unknown mode \(mode)")
    }
} catch {
    fail("\(error)")
}
