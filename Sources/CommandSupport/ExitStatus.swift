public import ArgumentParser

/// The suite's exit codes (`../shared/CONVENTIONS.md`), shared by every app.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// Success; an empty search result is a success.
    case success = 0
    /// An error not covered below (an input could not be read, a 5xx from the server, ...).
    case failure = 1
    /// The thing asked for does not exist (key, reservation, product).
    case notFound = 3
    /// `scan`: some readable input had no symbol or no text.
    case nothingFound = 4
    /// Update required: the server's minimum client version is above this app's.
    case updateRequired = 5
    /// Offline, and no cached data to answer with.
    case offline = 6
    /// Not permitted: the signed-in user's role or stores do not allow it (HTTP 403).
    case notPermitted = 13
    /// Usage error.
    case usage = 64
    /// Sign-in required (nobody signed in, session ended, or sign-in refused).
    case signInRequired = 77
    /// Stopped by SIGINT after a clean shutdown.
    case interrupted = 130
    /// Stopped by SIGTERM after a clean shutdown.
    case terminated = 143
    /// stdout's reader went away (EPIPE), as tools killed by SIGPIPE report it.
    case brokenPipe = 141

    /// The ArgumentParser exit code for this status.
    public var exitCode: ExitCode { ExitCode(rawValue) }
}
