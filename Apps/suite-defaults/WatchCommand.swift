import ArgumentParser
import CommandSupport
import Dispatch
import Foundation
import SharedDefaults

#if canImport(Glibc)
    import Glibc
#endif

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one JSON line per change to KEY (or to any key) until interrupted.",
        discussion: """
            Each line is {"suite", "key", "old", "new", "at"}: old/new as JSON (null when \
            absent), at the RFC 3339 time the change was seen. Changes by any process are \
            reported. Exits 130 on SIGINT and 143 on SIGTERM, after flushing output.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The key to watch; every key when omitted.") var key: String?

    func run() async throws {
        let store: SharedStore
        do {
            store = try global.openStore(refresh: .notifications)
        } catch {
            try reporting { throw error }
            return
        }
        let signals = StopSignals()
        let changes = store.changes(forKey: key)
        for await change in changes {
            emit(change.jsonLine())
        }
        _ = signals
    }
}

/// Turns SIGINT and SIGTERM into a clean exit with 130 or 143 (output is written unbuffered,
/// so every printed change is complete).
final class StopSignals {
    private let sources: [any DispatchSourceSignal]

    init() {
        var sources: [any DispatchSourceSignal] = []
        for (number, status) in [
            (SIGINT, ExitStatus.interrupted), (SIGTERM, ExitStatus.terminated),
        ] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { exit(status.rawValue) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }
}
