import Synchronization

/// The suite's one progress display: `[######--------] 120/500 images` on stderr, redrawn in
/// place at most 10 times a second and on the last item; nothing when stderr is not a
/// terminal, under `--quiet`, or for fewer than `minimumTotal` items.
///
/// ```swift
/// let progress = ProgressLine(noun: "images", enabled: Console.stderrIsTerminal && !quiet)
/// progress.update(done: 12, total: 300)
/// progress.clear()   // before a message, so it starts on a clean line
/// progress.finish()  // at the end: the line is removed
/// ```
public final class ProgressLine: Sendable {
    private struct State {
        var lastDraw: ContinuousClock.Instant?
        var shown = false
        var done = 0
    }

    private let noun: String
    private let enabled: Bool
    private let minimumTotal: Int
    private let state = Mutex(State())

    /// A display counting `noun` (`images`, `files`); `enabled` when people watch stderr.
    public init(noun: String, enabled: Bool, minimumTotal: Int = 1) {
        self.noun = noun
        self.enabled = enabled
        self.minimumTotal = minimumTotal
    }

    /// Shows `done` of `total`.
    public func update(done: Int, total: Int) {
        guard enabled, total >= max(1, minimumTotal) else { return }
        let now = ContinuousClock.now
        let draw = state.withLock { state -> Bool in
            state.done = done
            if done < total, state.shown, let last = state.lastDraw,
                now - last < .milliseconds(100)
            {
                return false
            }
            state.lastDraw = now
            state.shown = true
            return true
        }
        guard draw else { return }
        Console.write("\r\u{1B}[K" + Self.render(done: done, total: total, noun: noun))
    }

    /// Counts one more of `total` done.
    public func step(total: Int) {
        let done = state.withLock { state -> Int in
            state.done += 1
            return state.done
        }
        update(done: done, total: total)
    }

    /// Removes the line, so a message starts at the left margin (the next update draws it
    /// again).
    public func clear() {
        let shown = state.withLock { state -> Bool in
            defer {
                state.shown = false
                state.lastDraw = nil
            }
            return state.shown
        }
        if shown { Console.write("\r\u{1B}[K") }
    }

    /// Ends the display: the line is removed.
    public func finish() { clear() }

    /// `[######--------] 120/500 images`, 30 cells wide.
    public static func render(done: Int, total: Int, noun: String) -> String {
        let width = 30
        let filled = width * min(max(done, 0), total) / max(total, 1)
        let bar =
            String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        return "[\(bar)] \(done)/\(total) \(noun)"
    }
}
