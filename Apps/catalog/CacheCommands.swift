import ArgumentParser
import ClientCommands
import CommandSupport
import Foundation
import Models
import ProductImages
import SuiteClient

struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Show or empty the image cache every suite tool shares.",
        discussion: """
            The cache is the folder `images` in the suite container (SHOPFLOOR_HOME), limited \
            to 256 MiB however many tools and processes write to it. Neither command uses the \
            network.
            """,
        subcommands: [Stats.self, Clear.self]
    )

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stats",
            abstract: "Show how many images the cache holds and how many bytes.",
            discussion: """
                JSON (with --json or when stdout is not a terminal): {"directory", "entries", \
                "bytes", "reservedBytes", "sizeLimit"}.
                """
        )

        @OptionGroup var common: CommonOptions

        struct Report: Encodable {
            var directory: String
            var entries: Int
            var bytes: Int
            var reservedBytes: Int
            var sizeLimit: Int
        }

        func run() async throws {
            try withImageCache(common) { cache, output in
                let stats = try cache.statistics()
                let report = Report(
                    directory: cache.directory.path,
                    entries: stats.entryCount,
                    bytes: stats.totalBytes,
                    reservedBytes: stats.reservedBytes,
                    sizeLimit: stats.sizeLimit
                )
                if output.json { return try output.printJSON(report) }
                var text = "directory  \(report.directory)\n"
                text += "images     \(report.entries)\n"
                text +=
                    "size       \(Self.size(report.bytes)) of \(Self.size(report.sizeLimit)) (\(report.bytes) bytes)\n"
                if report.reservedBytes > 0 {
                    text += "writing    \(Self.size(report.reservedBytes)) in flight\n"
                }
                try output.writeOut(text)
            }
        }

        /// `512 B`, `48.0 KiB`, `1.5 MiB`.
        static func size(_ bytes: Int) -> String {
            if bytes < 1024 { return "\(bytes) B" }
            let units = ["KiB", "MiB", "GiB"]
            var value = Double(bytes) / 1024
            var unit = 0
            while value >= 1024, unit < units.count - 1 {
                value /= 1024
                unit += 1
            }
            return "\(String(format: "%.1f", value)) \(units[unit])"
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clear",
            abstract: "Remove every cached image (for every suite tool).",
            discussion: "Writes in flight in other processes still complete."
        )

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try withImageCache(common) { cache, output in
                let before = try cache.statistics()
                try cache.removeAll()
                output.note(
                    "removed \(before.entryCount) images (\(Stats.size(before.totalBytes))) from \(cache.directory.path)"
                )
            }
        }
    }
}

/// Runs `body` with the image cache of the suite container (no network).
private func withImageCache(
    _ common: CommonOptions,
    _ body: (ProductImageCache, Output) throws -> Void
) throws {
    let output = Output(options: common)
    do {
        let logger = common.makeLogger(label: "catalog")
        let client = try SuiteClient(
            configuration: SuiteClientConfiguration(
                appName: "catalog",
                appVersion: SuiteVersion.semantic
            ),
            logger: logger
        )
        try body(try ProductImageCache(client: client, logger: logger), output)
    } catch let error as SuiteClientError {
        throw CommandError(ExitStatus(rawValue: error.exitCode) ?? .failure, error.description)
    }
}
