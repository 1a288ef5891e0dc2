public import ArgumentParser
public import Logging

/// Flags every app shares: `--json`, `--quiet`, `--verbose`.
public struct CommonOptions: ParsableArguments, Sendable {
    /// Print machine-readable JSON on stdout.
    @Flag(help: "Print JSON on stdout (stable keys, RFC 3339 instants).")
    public var json = false

    /// Print nothing on stderr but errors.
    @Flag(name: .shortAndLong, help: "Print only errors on stderr.")
    public var quiet = false

    /// Log debug details on stderr.
    @Flag(name: .shortAndLong, help: "Log details on stderr.")
    public var verbose = false

    /// Creates the default options.
    public init() {}

    /// The level these flags ask for: debug with `--verbose`, error with `--quiet`, else
    /// warning.
    public var logLevel: Logger.Level { verbose ? .debug : (quiet ? .error : .warning) }

    /// A logger writing the suite's `error:`/`warning:` lines to stderr at the level these
    /// flags ask for.
    public func makeLogger(label: String) -> Logger {
        var logger = Logger(label: label) { SuiteLogHandler(label: $0) }
        logger.logLevel = logLevel
        return logger
    }
}
