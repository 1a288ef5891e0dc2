import CommandSupport
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Catches SIGINT so `scan` can stop handing out images, flush what it printed and exit 130.
final class InterruptWatch: Sendable {
    private let flag = Atomic<Bool>(false)
    // The source must stay alive; it is only touched on the main thread at setup.
    nonisolated(unsafe) private var source: (any DispatchSourceSignal)?

    init() {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [self] in
            if self.flag.exchange(true, ordering: .relaxed) {
                // A second Ctrl-C: stop at once.
                _exit(ExitStatus.interrupted.rawValue)
            }
        }
        self.source = source
        source.resume()
    }

    var fired: Bool { flag.load(ordering: .relaxed) }
}

/// `12/300` on stderr while scanning, only on a terminal and for more than a few files.
final class Progress {
    private let total: Int
    private let enabled: Bool
    private var done = 0
    private var shown = false

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled && total >= 10
    }

    func step() {
        done += 1
        guard enabled else { return }
        Console.write("\rscanning \(done)/\(total)")
        shown = true
    }

    func clear() {
        guard shown else { return }
        Console.write("\r\u{1B}[K")
        shown = false
    }
}
