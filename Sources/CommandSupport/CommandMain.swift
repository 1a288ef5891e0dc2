public import ArgumentParser
internal import CStartup
internal import Foundation
import Logging
import Models
import Plumbing
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An app's root command: declaring the `@main` type `SuiteCommand` gives it the suite's one
/// entry point, ``CommandMain/run(_:arguments:)``.
public protocol SuiteCommand: AsyncParsableCommand {}

extension SuiteCommand {
    /// Runs the command through ``CommandMain/run(_:arguments:)``.
    public static func main() async {
        await CommandMain.run(Self.self)
    }
}

/// An error that says how the suite's entry point reports it: the exit status, and its
/// description printed after `error: `. Packages' errors conform in the apps that use them
/// (`suite-defaults` makes SharedDefaults' `SharedStoreError` one).
public protocol ReportableError: Error, CustomStringConvertible {
    /// The exit status (CONVENTIONS' exit codes).
    var exitStatus: ExitStatus { get }
}

/// A failure a command reports: the message for stderr and the exit status it maps to.
public struct CommandError: ReportableError, Sendable, CustomStringConvertible {
    /// The exit status.
    public var status: ExitStatus
    /// The exit status (``ReportableError``).
    public var exitStatus: ExitStatus { status }
    /// What went wrong, for people (printed after `error: `).
    public var message: String

    /// Creates a failure.
    public init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A usage error (64).
    public static func usage(_ message: String) -> CommandError { CommandError(.usage, message) }
    /// The thing asked for does not exist (3).
    public static func notFound(_ message: String) -> CommandError {
        CommandError(.notFound, message)
    }
    /// Any other failure (1).
    public static func failure(_ message: String) -> CommandError {
        CommandError(.failure, message)
    }

    /// The message.
    public var description: String { message }
}

/// The suite's one entry point: start-up, parsing, running, and turning every outcome into
/// the exit codes of CONVENTIONS.md, with messages on stderr prefixed `error:`.
///
/// - Stop signals are caught before parsing (``StopSignal``); the command runs as a task
///   that the first signal cancels; the process then exits 130 or 143.
/// - swift-log is bootstrapped with ``SuiteLogHandler``, so every package's log lines carry
///   the suite's prefixes.
/// - `--help` and `--version` go to stdout with exit 0, through the checked writer.
/// - Errors: ``CommandError`` and ``ExitCode`` as they say; parse and validation errors 64;
///   ``OutputError`` 1 with a message, or 141 for a closed pipe; a ``ReportableError`` as it
///   says; Plumbing's `ContainerError` 64 for an invalid suite name, else 1; anything else 1.
/// - A command that succeeded after a message could not be written to stderr exits 1.
public enum CommandMain {
    /// The (sub)command parsed from the arguments, for the usage of an error it throws.
    private static let parsedCommand = Mutex<(any ParsableCommand.Type)?>(nil)

    /// Parses `arguments` (the process's by default) as `command` and runs it; never returns.
    public static func run(_ command: any ParsableCommand.Type, arguments: [String]? = nil) async
        -> Never
    {
        StopSignal.install()
        LoggingSystem.bootstrap { SuiteLogHandler(label: $0) }
        let parsed: any ParsableCommand
        do {
            parsed = try command.parseAsRoot(arguments)
        } catch {
            if let unknown = UnknownSubcommand.find(
                in: arguments ?? Array(CommandLine.arguments.dropFirst()),
                root: command
            ) {
                Console.write(unknown.message)
                StopSignal.exit(ExitStatus.usage.rawValue)
            }
            finish(error, command: command)
        }
        parsedCommand.withLock { $0 = type(of: parsed) }
        // Safe: from here on only the task touches the parsed command.
        nonisolated(unsafe) let handedOver = parsed
        let task = Task { try await run(handedOver) }
        StopSignal.onStop { task.cancel() }
        switch await task.result {
        case .success: finish(nil, command: command)
        case .failure(let error): finish(error, command: command)
        }
    }

    private static func run(_ command: sending any ParsableCommand) async throws {
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            var syncCommand = command
            try syncCommand.run()
        }
    }

    /// The exit status and stderr message of an outcome; exits.
    private static func finish(_ error: (any Error)?, command: any ParsableCommand.Type) -> Never {
        if let stop = StopSignal.exitStatus {
            // Stopped: whatever the command made of the cancellation, the answer is 130/143.
            if let error, !(error is CancellationError), !(error is ExitCode) {
                report(error, command: command)
            }
            StopSignal.exit(stop.rawValue)
        }
        guard let error else {
            StopSignal.exit(Console.hasFailed ? ExitStatus.failure.rawValue : 0)
        }
        let status = report(error, command: command)
        StopSignal.exit(status == 0 && Console.hasFailed ? ExitStatus.failure.rawValue : status)
    }

    /// Prints what `error` needs printed; returns the exit status it maps to.
    @discardableResult
    private static func report(_ error: any Error, command: any ParsableCommand.Type) -> Int32 {
        switch error {
        case let failure as any ReportableError:
            Console.error(failure.description)
            return failure.exitStatus.rawValue
        case let exit as ExitCode:
            return exit.rawValue
        case let output as OutputError:
            if output.isClosedPipe { return ExitStatus.brokenPipe.rawValue }
            Console.error(output.description)
            return ExitStatus.failure.rawValue
        case let container as ContainerError:
            Console.error(container.description)
            return container.code == .invalidSuiteName
                ? ExitStatus.usage.rawValue : ExitStatus.failure.rawValue
        case is CancellationError:
            return ExitStatus.interrupted.rawValue
        default:
            break
        }
        // ArgumentParser's own outcomes: help and version (0), usage errors (64).
        let code = command.exitCode(for: error)
        let message = command.fullMessage(for: error)
        if code == .success {
            if !message.isEmpty {
                do {
                    try StandardOutput.line(message)
                } catch {
                    return report(error, command: command)
                }
            }
            return 0
        }
        if let validation = error as? ArgumentParser.ValidationError,
            let subcommand = parsedCommand.withLock({ $0 }), subcommand != command
        {
            // Thrown by a subcommand's run(): its own usage, not the top-level one.
            Console.write(
                "error: \(Console.safe(validation.message))\n"
                    + "Usage: \(command.usageString(for: subcommand))\n"
                    + "  See '\(UnknownSubcommand.path(to: subcommand, from: command)) --help' for more information.\n"
            )
            return ExitStatus.usage.rawValue
        }
        if code == .validationFailure || error is ArgumentParser.ValidationError {
            var text = message
            if text.hasPrefix("Error: ") { text = "error: " + text.dropFirst("Error: ".count) }
            Console.write(text.hasSuffix("\n") ? text : text + "\n")
            return ExitStatus.usage.rawValue
        }
        Console.error("\(error)")
        return ExitStatus.failure.rawValue
    }
}
