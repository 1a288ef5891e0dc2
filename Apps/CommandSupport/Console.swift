#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Messages for people go to stderr, prefixed as the suite's conventions ask; data goes to
/// stdout through `print`.
public enum Console {
    /// Writes `error: <message>` to stderr.
    public static func error(_ message: String) { write("error: \(message)\n") }

    /// Writes `warning: <message>` to stderr.
    public static func warning(_ message: String) { write("warning: \(message)\n") }

    /// Writes a line to stderr without a prefix (progress, notes).
    public static func note(_ message: String) { write("\(message)\n") }

    /// Writes raw text to stderr in as few `write(2)` calls as the kernel allows, so lines
    /// from concurrent tasks do not interleave mid-line.
    public static func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // stderr closed: nothing useful left to do with a message
                }
                offset += written
            }
        }
    }

    /// Whether stderr is a terminal (progress is shown only then).
    public static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Whether stdout is a terminal (tables are printed only then).
    public static var stdoutIsTerminal: Bool { isatty(1) == 1 }

    /// Whether colour may be used on stderr: a terminal and `NO_COLOR` unset.
    public static var useColor: Bool { stderrIsTerminal && getenv("NO_COLOR") == nil }
}
