internal import Foundation

/// An error from the Auth client or server pieces.
///
/// Messages name what failed (a URL path, a file, a status) and never carry a token, a
/// password, a signing key or a signature.
public struct AuthError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable for programs to switch on.
    public enum Code: String, Sendable, Equatable {
        /// No usable sign-in: never signed in, signed out, refresh token refused, or refresh
        /// failed repeatedly. The user has to sign in again (apps exit 77).
        case signInRequired
        /// The server refused the user name or password.
        case invalidCredentials
        /// The call's overall deadline passed before it finished.
        case deadlineExceeded
        /// The calling task was cancelled.
        case cancelled
        /// The request could not reach the server or the connection failed.
        case transport
        /// The server answered something Auth could not read (bad token response, ...).
        case invalidResponse
        /// The token file or the refresh lease in the suite container could not be used.
        case tokenStore
        /// A request given to the client cannot be sent (no URL, unsupported scheme, ...).
        case invalidRequest
        /// The request (or a redirect) goes to another origin than the server the stored
        /// credentials belong to; nothing was sent there. Sign in to that server, or address
        /// the stored one.
        case originMismatch
        /// Credentials would travel over plain http to a host that is not loopback; nothing
        /// was sent. Use https (or, in a test rig only,
        /// ``AuthClientConfiguration/allowInsecureHTTP``).
        case insecureTransport
        /// A stored password hash cannot be read.
        case invalidPasswordHash
        /// The server did not prove itself: a plain-http listener on this machine that
        /// belongs to another user (a squatter on the server's port), or an https server
        /// whose certificate is not trusted. Nothing was sent. Apps exit 1, not "offline".
        case untrustedServer
    }

    /// What went wrong.
    public var code: Code
    /// A human message, free of secrets.
    public var message: String
    /// The HTTP status involved, when there is one.
    public var status: Int?
    /// The underlying error, when there is one (never one that carries a secret).
    public var cause: (any Error & Sendable)?
    /// How long the server asked to wait (`Retry-After` on a 429 or 503), when it did.
    public var retryAfter: Duration?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        status: Int? = nil,
        cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.cause = cause
    }

    /// A description without secrets.
    public var description: String {
        if let cause { return "\(message) (\(cause))" }
        return message
    }
}
