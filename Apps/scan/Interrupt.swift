import CommandSupport

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
