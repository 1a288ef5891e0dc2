import ChildProcesses
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
/// The relay reports each connection, request line and lost answer on its stdout, which
/// ``waitFor(_:timeout:)`` awaits (a request known to be in flight), and its counts on its
/// stderr when it stops.
final class DelayRelay: Sendable {
    let child: ChildProcess
    let port: Int

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
    ) async throws {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Benchmarks/network/delay_relay.py")
        child = try await ChildProcess.start(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", script.path, "--listen", "127.0.0.1:0", "--to",
                "127.0.0.1:\(targetPort)",
                "--delay-ms", String(link.delayMilliseconds), "--down-kbit", String(link.downKbit),
                "--up-kbit", String(link.upKbit), "--lose-answers", String(loseAnswers),
                "--lose-match", loseMatch, "--lifetime", String(lifetime), "--events",
            ] + hold.flatMap { ["--hold", $0] }
        )
        do {
            let first = try await Self.waitFor("listening on ", in: child, timeout: 30)
            guard let found = Int(first.split(separator: ":").last ?? "") else {
                throw ServerStartError(message: "delay relay: unexpected first line \(first)")
            }
            port = found
        } catch {
            child.signal(SIGKILL)
            throw error
        }
    }

    /// The first event line that begins with `prefix`, waiting up to `timeout` seconds for
    /// the relay to print it.
    @discardableResult
    func waitFor(_ prefix: String, timeout: Double = 30) async throws -> String {
        try await Self.waitFor(prefix, in: child, timeout: timeout)
    }

    private static func waitFor(_ prefix: String, in child: ChildProcess, timeout: Double)
        async throws -> String
    {
        if let line = await child.line(startingWith: prefix, timeout: timeout) { return line }
        if !child.isRunning {
            let outcome = await child.wait(timeout: 5)
            throw ServerStartError(message: "delay relay exited: \(outcome.stderr)")
        }
        throw ServerStartError(
            message: "delay relay: no '\(prefix)' within \(timeout) s; saw \(child.lines)"
        )
    }

    /// Every event line so far.
    var events: [String] { child.lines }

    /// Stops the relay (closing every connection) and returns its counts: `connections`,
    /// `requests` per method, `answersLost`.
    @discardableResult
    func stop() async -> [String: Any] {
        let outcome = await child.stop(with: SIGTERM).outcome
        let last = outcome.stderr.split(separator: "\n").last.map(String.init) ?? "{}"
        return (try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            ?? [:]
    }

    /// Stops the relay without waiting (for a `defer`, where nothing can be awaited).
    func terminate() { child.signal(SIGTERM) }

    deinit { terminate() }
}
