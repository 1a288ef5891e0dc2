public import ArgumentParser
public import CommandSupport
import Foundation
import Logging
import Models
public import SuiteClient

/// The options every command of a client app that talks to the server shares: `--server`,
/// `--connect-timeout`, `--deadline` and the suite's common flags.
public struct ClientOptions<App: SuiteClientApp>: ParsableArguments, Sendable {
    /// `--server URL`: the store server (else `SHOPFLOOR_SERVER`, else the one stored at
    /// sign-in, else `http://127.0.0.1:8080`).
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store server (else SHOPFLOOR_SERVER, else the one stored at sign-in, else http://127.0.0.1:8080).",
            valueName: "url"
        )
    )
    public var server: String?

    /// `--connect-timeout SECONDS` (more than 0, at most 600; default 2).
    @Option(
        name: .long,
        help: ArgumentHelp("Seconds to wait for a connection to the server.", valueName: "seconds")
    )
    public var connectTimeout: Double = 2

    /// `--deadline SECONDS` for the whole command (more than 0, at most 3600); nil when not
    /// given: the command's default applies (``withClient(_:defaultDeadline:_:)``).
    @Option(name: .long, help: ArgumentHelp(App.deadlineHelp, valueName: "seconds"))
    public var deadline: Double?

    /// `--json`, `--quiet`, `--verbose`.
    @OptionGroup public var common: CommonOptions

    /// Options with their defaults (the argument parser fills them in).
    public init() {}

    /// Checks the timeouts' ranges (a usage error, exit 64, otherwise).
    public func validate() throws {
        guard connectTimeout > 0, connectTimeout <= 600 else {
            throw ValidationError("--connect-timeout must be more than 0 and at most 600 seconds")
        }
        if let deadline, !(deadline > 0 && deadline <= 3_600) {
            throw ValidationError("--deadline must be more than 0 and at most 3600 seconds")
        }
    }

    /// The client for this command (no network yet), named after the app; `defaultDeadline`
    /// seconds when `--deadline` is not given.
    /// - Throws: ``SuiteClientError`` when the server URL or the suite container is unusable.
    public func makeClient(defaultDeadline: Double = 30) throws(SuiteClientError) -> SuiteClient {
        try SuiteClient(
            configuration: SuiteClientConfiguration(
                appName: App.appName,
                appVersion: SuiteVersion.semantic,
                serverOption: server,
                connectTimeout: .milliseconds(Int64(connectTimeout * 1000)),
                deadline: .milliseconds(Int64((deadline ?? defaultDeadline) * 1000))
            ),
            logger: common.makeLogger(label: App.appName)
        )
    }
}

/// Runs a command's body with a client and the command's ``Output``; a ``SuiteClientError``
/// becomes the suite's `CommandError` (`error: …` on stderr, its exit code).
/// - Parameters:
///   - options: the command's client options.
///   - defaultDeadline: the deadline in seconds when `--deadline` is not given.
///   - body: the command's work.
public func withClient<App>(
    _ options: ClientOptions<App>,
    defaultDeadline: Double = 30,
    _ body: (SuiteClient, Output) async throws -> Void
) async throws {
    let output = Output(options: options.common)
    do {
        let client = try options.makeClient(defaultDeadline: defaultDeadline)
        try await body(client, output)
    } catch let error as SuiteClientError {
        throw CommandError(ExitStatus(rawValue: error.exitCode) ?? .failure, error.description)
    }
}
