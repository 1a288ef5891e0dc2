import Foundation
import Models

#if canImport(Glibc)
    import Glibc
#endif

/// The terminal settings to put back if a stop signal arrives while echo is off. Written
/// once before the stop action is registered, and only read after.
nonisolated(unsafe) private var savedTerminal = termios()

/// Questions to a person on stderr, answers from stdin. No lock is held while waiting.
public enum Prompt {
    /// Whether stdin is a terminal.
    public static var stdinIsTerminal: Bool { isatty(0) == 1 }

    /// Asks for a line; nil at the end of input. The question may quote the server (a form's
    /// labels): nothing in it reaches the terminal raw.
    public static func line(_ question: String) -> String? {
        Console.write(TextSafety.terminal(question, multiline: true))
        return readLine(strippingNewline: true)
    }

    /// Asks for a secret with echo off (stdin must be a terminal); nil at the end of input.
    /// Echo comes back on after the answer, and on SIGINT/SIGTERM before the process exits
    /// (130/143).
    public static func secret(_ question: String) -> String? {
        var settings = termios()
        guard tcgetattr(0, &settings) == 0 else { return line(question) }
        savedTerminal = settings
        StopSignal.onStop {
            tcsetattr(0, TCSANOW, &savedTerminal)
            Console.write("\n")
        }
        var quiet = settings
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        tcsetattr(0, TCSAFLUSH, &quiet)
        defer { tcsetattr(0, TCSAFLUSH, &settings) }
        Console.write(TextSafety.terminal(question, multiline: true))
        return readLine(strippingNewline: true)
    }

    /// Everything on stdin with one trailing newline removed (`--password-stdin`).
    public static func readAllStandardInput() -> String? {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        guard var text = String(data: data, encoding: .utf8) else { return nil }
        // "\r\n" is one Character: either ending is one removeLast().
        if text.hasSuffix("\r\n") || text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
