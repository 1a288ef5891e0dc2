import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A slow link on loopback: `Benchmarks/network/delay_relay.py` (the relay `make
/// bench-network` puts between its namespaces) as a child process in front of a server.
/// Every chunk waits the one-way latency in each direction, a new connection pays its
/// handshake round trip, and the rates, when given, are shared by every connection.
///
/// With `events`, the relay reports each connection, request line and lost answer on its
/// stdout, which ``waitFor(_:timeout:)`` awaits (a request known to be in flight).
final class DelayRelay: @unchecked Sendable {
    // Safe: the process is only used by the test that owns this instance; the lines are in
    // a `RelayOutput`, which guards them.
    let process: Process
    let port: Int
    private let output = RelayOutput()

    var url: String { "http://127.0.0.1:\(port)" }

    /// The relay's link settings.
    struct Link: Sendable {
        var delayMilliseconds: Double
        var downKbit: Double = 0
        var upKbit: Double = 0
        /// The suite's network profiles (make bench-network), on loopback.
        static let threeG = Link(delayMilliseconds: 100, downKbit: 780, upKbit: 330)
        static let edge = Link(delayMilliseconds: 400, downKbit: 240, upKbit: 200)
    }

    /// Starts the relay to `127.0.0.1:targetPort` and waits for its `listening on` line.
    /// - Parameters:
    ///   - loseAnswers: drop the server's answer to this many requests whose request line
    ///     starts with `loseMatch`, resetting the client's connection (a lost answer).
    ///   - hold: request line prefixes never passed on (a server that never answers them).
    init(
        to targetPort: Int,
        link: Link = Link(delayMilliseconds: 0),
        loseAnswers: Int = 0,
        loseMatch: String = "POST ",
        hold: [String] = [],
        lifetime: Int = 300
    ) throws {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Benchmarks/network/delay_relay.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "python3", script.path, "--listen", "127.0.0.1:0", "--to",
                "127.0.0.1:\(targetPort)",
                "--delay-ms", String(link.delayMilliseconds), "--down-kbit", String(link.downKbit),
                "--up-kbit", String(link.upKbit), "--lose-answers", String(loseAnswers),
                "--lose-match", loseMatch, "--lifetime", String(lifetime), "--events",
            ] + hold.flatMap { ["--hold", $0] }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try CommandRunner.launch(process)
        self.process = process
        output.collect(stdout: out, stderr: err)
        do {
            let first = try output.waitFor("listening on ", timeout: 30)
            guard let found = Int(first.split(separator: ":").last ?? "") else {
                throw ServerStartError(message: "delay relay: unexpected first line \(first)")
            }
            port = found
        } catch {
            process.terminate()
            throw error
        }
    }

    /// The first event line that begins with `prefix`, waiting up to `timeout` seconds for
    /// the relay to print it.
    @discardableResult
    func waitFor(_ prefix: String, timeout: Double = 30) throws -> String {
        try output.waitFor(prefix, timeout: timeout)
    }

    /// Every event line so far.
    var events: [String] { output.lines }

    /// Stops the relay (closing every connection) and returns its counts: `connections`,
    /// `requests` per method, `answersLost`.
    @discardableResult
    func stop() -> [String: Any] {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        let text = output.waitForExit()
        let last = text.split(separator: "\n").last.map(String.init) ?? "{}"
        return (try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            ?? [:]
    }

    deinit { stop() }
}

/// The relay's stdout lines, collected by a reader thread, and its stderr at exit.
private final class RelayOutput: @unchecked Sendable {
    // Safe: every stored property is read and written under `condition`.
    private let condition = NSCondition()
    private var collected: [String] = []
    private var exited = false
    private var stderr = ""

    func collect(stdout: Pipe, stderr: Pipe) {
        let thread = Thread { [self] in
            let handle = stdout.fileHandleForReading
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    condition.lock()
                    collected.append(line)
                    condition.broadcast()
                    condition.unlock()
                }
            }
            let text = String(
                decoding: stderr.fileHandleForReading.readDataToEndOfFile(),
                as: UTF8.self
            )
            condition.lock()
            self.stderr = text
            exited = true
            condition.broadcast()
            condition.unlock()
        }
        thread.start()
    }

    var lines: [String] {
        condition.lock()
        defer { condition.unlock() }
        return collected
    }

    func waitFor(_ prefix: String, timeout: Double) throws -> String {
        let end = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let line = collected.first(where: { $0.hasPrefix(prefix) }) { return line }
            if exited { throw ServerStartError(message: "delay relay exited: \(stderr)") }
            guard condition.wait(until: end) else {
                throw ServerStartError(
                    message: "delay relay: no '\(prefix)' within \(timeout) s; saw \(collected)"
                )
            }
        }
    }

    /// Waits for the relay's output to end; returns its stderr.
    func waitForExit() -> String {
        condition.lock()
        defer { condition.unlock() }
        while !exited { condition.wait() }
        return stderr
    }
}
