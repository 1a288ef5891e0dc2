import CommandSupport
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Catches SIGINT so `scan` can stop handing out images, flush what it printed and exit 130.
final class InterruptWatch: Sendable {
    /// The process's one watch.
    static let shared = InterruptWatch()

    private let flag = Atomic<Bool>(false)
    private let installed = Mutex<(any DispatchSourceSignal)?>(nil)

    private init() {}

    /// Replaces SIGINT's default action with a flag; a second SIGINT exits at once.
    func install() {
        installed.withLock { source in
            guard source == nil else { return }
            signal(SIGINT, SIG_IGN)
            let made = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
            made.setEventHandler { [self] in
                if self.flag.exchange(true, ordering: .relaxed) {
                    _exit(ExitStatus.interrupted.rawValue)
                }
            }
            made.resume()
            source = made
        }
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
