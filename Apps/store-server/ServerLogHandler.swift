import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Models

/// `serve --log-format`: how the server's log lines look on stderr.
enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `2026-11-27T07:40:00.123Z info request (method: GET, request_id: …, status: 200)`.
    case text
    /// One JSON object per line: `timestamp`, `level`, `message`, then the metadata.
    case json
}

/// The server's log lines: a UTC timestamp (milliseconds), the level, the message and the
/// metadata, one line per event, as text or JSON (`--log-format`). Hummingbird's request id
/// (which the server sets to the `X-Request-ID` it answers with) is printed as `request_id`,
/// so every line of a request carries exactly one id.
struct ServerLogHandler: LogHandler {
    let label: String
    let format: LogFormat
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        Console.write(
            Self.line(
                format: format,
                date: Date(),
                level: event.level,
                message: "\(event.message)",
                metadata: merged
            )
        )
    }

    /// The printed line, ending in a newline.
    static func line(
        format: LogFormat,
        date: Date,
        level: Logger.Level,
        message: String,
        metadata: Logger.Metadata
    ) -> String {
        var fields: [(String, String)] = []
        for key in metadata.keys.sorted() {
            let name = key == "hb.request.id" ? "request_id" : key
            fields.append((name, "\(metadata[key]!)"))
        }
        fields.sort { $0.0 < $1.0 }
        let timestamp = date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        switch format {
        case .text:
            var text = "\(timestamp) \(level) \(safe(message))"
            if !fields.isEmpty {
                text +=
                    " (" + fields.map { "\($0.0): \(safe($0.1))" }.joined(separator: ", ")
                    + ")"
            }
            return text + "\n"
        case .json:
            var object = "{\"timestamp\":\(quoted(timestamp)),\"level\":\(quoted(level.rawValue))"
            object += ",\"message\":\(quoted(message))"
            for (name, value) in fields where !["timestamp", "level", "message"].contains(name) {
                object += ",\(quoted(name)):\(quoted(value))"
            }
            return object + "}\n"
        }
    }

    /// `text` on one line with nothing that could drive a terminal.
    private static func safe(_ text: String) -> String {
        TextSafety.terminal(text, multiline: false)
    }

    /// `text` as a JSON string.
    private static func quoted(_ text: String) -> String {
        let data = (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
