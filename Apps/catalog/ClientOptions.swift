import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Models
import SuiteClient

/// The options every command that talks to the server shares (as `reservations` has them).
struct ClientOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store server (else SHOPFLOOR_SERVER, else the one stored at sign-in, else http://127.0.0.1:8080).",
            valueName: "url"
        )
    )
    var server: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds to wait for a connection to the server.", valueName: "seconds")
    )
    var connectTimeout: Double = 2

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds the whole command may take (default 30; prefetch 600).",
            valueName: "seconds"
        )
    )
    var deadline: Double?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard connectTimeout > 0, connectTimeout <= 600 else {
            throw ValidationError("--connect-timeout must be more than 0 and at most 600 seconds")
        }
        if let deadline, !(deadline > 0 && deadline <= 3_600) {
            throw ValidationError("--deadline must be more than 0 and at most 3600 seconds")
        }
    }

    /// The client for this command (no network yet); `defaultDeadline` when --deadline is
    /// not given.
    func makeClient(defaultDeadline: Double = 30) throws(SuiteClientError) -> SuiteClient {
        try SuiteClient(
            configuration: SuiteClientConfiguration(
                appName: "catalog",
                appVersion: SemanticVersion(SuiteVersion.current) ?? SemanticVersion(0, 0, 0),
                serverOption: server,
                connectTimeout: .milliseconds(Int64(connectTimeout * 1000)),
                deadline: .milliseconds(Int64((deadline ?? defaultDeadline) * 1000))
            ),
            logger: common.makeLogger(label: "catalog")
        )
    }
}

/// Runs a command's body with a client; a ``SuiteClientError`` becomes the suite's
/// `CommandError` (`error: …` on stderr, its exit code).
func withClient(
    _ options: ClientOptions,
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
