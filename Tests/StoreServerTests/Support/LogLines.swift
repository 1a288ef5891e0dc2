import Logging
import Synchronization

/// Keeps every line a logger writes (message and metadata as the default handler renders
/// them), so a test can check what reaches an operator's log.
final class LogLines: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    /// The lines so far.
    var all: [String] { lines.withLock { $0 } }

    func log(event: LogEvent) {
        let metadata = (event.metadata ?? [:]).sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.withLock { $0.append("\(event.level) \(event.message) \(metadata)") }
    }

    /// A logger writing here.
    var logger: Logger {
        var logger = Logger(label: "captured") { _ in self }
        logger.logLevel = .trace
        return logger
    }
}
