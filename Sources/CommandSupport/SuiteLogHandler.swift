public import Logging

/// swift-log lines as the suite prints messages: `error: <message> (key: value, ...)` for
/// errors, `warning: ...` for warnings, `debug: ...` with `--verbose`; on stderr, under the
/// same lock as every other message. ``CommandMain`` bootstraps it for the whole process, so
/// the packages' loggers print this way too.
public struct SuiteLogHandler: LogHandler {
    /// The label of the logger (not printed: one command, one voice).
    public let label: String
    /// The lowest level printed.
    public var logLevel: Logger.Level = .warning
    /// Metadata printed with every message.
    public var metadata: Logger.Metadata = [:]

    /// Creates a handler; ``CommonOptions/makeLogger(label:)`` sets the level.
    public init(label: String) {
        self.label = label
    }

    /// Metadata by key.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one line to stderr.
    public func log(event: LogEvent) {
        Console.write(
            Self.line(
                level: event.level,
                message: "\(event.message)",
                metadata: metadata.merging(event.metadata ?? [:]) { _, new in new }
            )
        )
    }

    /// The printed line: `prefix: message (key: value, ...)` with the keys sorted.
    static func line(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        let prefix: String =
            switch level {
            case .critical, .error: "error"
            case .warning: "warning"
            case .notice, .info: "note"
            case .debug, .trace: "debug"
            }
        var text = "\(prefix): \(Console.safe(message))"
        if !metadata.isEmpty {
            text +=
                " ("
                + metadata.keys.sorted().map { "\($0): \(Console.safe("\(metadata[$0]!)"))" }
                .joined(separator: ", ")
                + ")"
        }
        return text + "\n"
    }
}
