/// A client app of the suite (`reservations`, `catalog`): what the shared commands and
/// options of this library need to know about it.
///
/// An app makes its root command conform and then uses the shared pieces with it:
///
/// ```swift
/// extension ReservationsCommand: SuiteClientApp {
///     static var appName: String { "reservations" }
/// }
/// typealias ClientOptions = ClientCommands.ClientOptions<ReservationsCommand>
/// // subcommands: [Login<ReservationsCommand>.self, Logout<ReservationsCommand>.self, ...]
/// ```
public protocol SuiteClientApp {
    /// The app's name: its executable, the name it gives the server (client configuration,
    /// forced update), its log label, and the name in messages such as `run \`NAME login\``.
    static var appName: String { get }

    /// The help line of `--deadline`. The default says the deadline is 30 seconds; an app
    /// with commands that default to another deadline (see
    /// ``withClient(_:defaultDeadline:_:)``) says so here.
    static var deadlineHelp: String { get }
}

extension SuiteClientApp {
    /// `Seconds the whole command may take. (default: 30.0)`: the default deadline of
    /// ``withClient(_:defaultDeadline:_:)``, in the form the argument parser shows defaults.
    public static var deadlineHelp: String { "Seconds the whole command may take. (default: 30.0)" }
}
