internal import CStartup
import Models
import Plumbing
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every write to stdout and stderr holds this lock for its whole `write` loop, and a stop
/// signal's exit takes it before `_exit`: no line is ever cut by an exit, and lines from
/// concurrent threads never interleave.
let standardStreamsLock = Mutex<Void>(())

/// Data for programs: stdout, written through at once and checked. A failed or short write
/// throws; ``CommandMain`` ends the command with exit 1 and a message, or 141 (quietly) for
/// a closed pipe, as other tools do.
public enum StandardOutput {
    /// Writes `text` in full.
    /// - Throws: ``OutputError`` when stdout is closed, full or gone.
    public static func write(_ text: String) throws(OutputError) {
        var text = text
        let status = text.withUTF8 { bytes in
            standardStreamsLock.withLock { _ in FileIO.writeAll(1, UnsafeRawBufferPointer(bytes)) }
        }
        if status != 0 { throw OutputError(errno: status) }
    }

    /// Writes `text` and a newline in full.
    /// - Throws: ``OutputError`` when stdout is closed, full or gone.
    public static func line(_ text: String) throws(OutputError) {
        try write(text + "\n")
    }

    /// Writes `bytes` in full.
    /// - Throws: ``OutputError`` when stdout is closed, full or gone.
    public static func write(_ bytes: UnsafeRawBufferPointer) throws(OutputError) {
        let status = standardStreamsLock.withLock { _ in FileIO.writeAll(1, bytes) }
        if status != 0 { throw OutputError(errno: status) }
    }

    /// Whether stdout is a terminal (tables are printed only then).
    public static var isTerminal: Bool { isatty(1) == 1 }
}

/// A write to stdout that failed: the command's output is incomplete.
public struct OutputError: Error, Sendable, CustomStringConvertible {
    /// The `errno` of the failed `write`.
    public var errno: Int32

    /// Creates an error.
    public init(errno: Int32) { self.errno = errno }

    /// The reader went away (`EPIPE`): exit 141 without a message, as `yes | head` does.
    public var isClosedPipe: Bool { errno == EPIPE }

    /// `cannot write to standard output: <reason>`.
    public var description: String {
        "cannot write to standard output: \(String(cString: strerror(errno)))"
    }
}

/// Messages for people go to stderr, prefixed as the suite's conventions ask. A message that
/// cannot be written is remembered: a command that would otherwise succeed exits 1.
public enum Console {
    private static let failed = Atomic<Bool>(false)

    /// Writes `error: <message>` to stderr. Messages often quote the server or a file, so
    /// controls and format characters in them are escaped (newlines and tabs kept).
    public static func error(_ message: String) { write("error: \(safe(message))\n") }

    /// Writes `warning: <message>` to stderr, escaped as ``error(_:)`` is.
    public static func warning(_ message: String) { write("warning: \(safe(message))\n") }

    /// Writes a line to stderr without a prefix (notes), escaped as ``error(_:)`` is.
    public static func note(_ message: String) { write("\(safe(message))\n") }

    /// `message` with nothing that could drive the terminal (Models' `TextSafety`).
    static func safe(_ message: String) -> String { TextSafety.terminal(message, multiline: true) }

    /// Writes raw text to stderr in full, under the lock every stdout and stderr write holds.
    public static func write(_ text: String) {
        var text = text
        let status = text.withUTF8 { bytes in
            standardStreamsLock.withLock { _ in FileIO.writeAll(2, UnsafeRawBufferPointer(bytes)) }
        }
        if status != 0 { failed.store(true, ordering: .relaxed) }
    }

    /// Whether a write to stderr has failed (a closed or full stderr).
    public static var hasFailed: Bool { failed.load(ordering: .relaxed) }

    /// Whether stderr is a terminal (progress is shown only then).
    public static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Whether stdout is a terminal (tables are printed only then).
    public static var stdoutIsTerminal: Bool { isatty(1) == 1 }

    /// The columns of the terminal on stdout (`TIOCGWINSZ`, else `COLUMNS`), nil when stdout
    /// is not a terminal.
    public static var stdoutColumns: Int? {
        guard isatty(1) == 1 else { return nil }
        var size = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let columns = getenv("COLUMNS").flatMap({ Int(String(cString: $0)) }), columns > 0 {
            return columns
        }
        return nil
    }

    /// Whether colour may be used on stderr: a terminal and `NO_COLOR` unset.
    public static var useColor: Bool { stderrIsTerminal && getenv("NO_COLOR") == nil }
}
