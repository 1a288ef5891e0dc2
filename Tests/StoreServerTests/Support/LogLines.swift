import InMemoryLogging
import Logging

/// Keeps every line a logger writes (message and metadata as the default handler renders
/// them), so a test can check what reaches an operator's log. Built on swift-log's
/// `InMemoryLogHandler`.
struct LogLines: Sendable {
    private let handler = InMemoryLogHandler()

    /// The lines so far.
    var all: [String] {
        handler.entries.map { entry in
            let metadata = entry.metadata.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            return "\(entry.level) \(entry.message) \(metadata)"
        }
    }

    /// A logger writing here.
    var logger: Logger {
        var logger = Logger(label: "captured") { _ in handler }
        logger.logLevel = .trace
        return logger
    }
}
