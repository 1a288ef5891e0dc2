internal import Foundation
public import Models

/// A failure of a ``SuiteClient`` call: a stable code, a message for people that names what
/// failed, the HTTP status and problem document when the server answered, and the cause.
///
/// Apps print `error: <message>` and exit with ``exitCode`` (the suite's exit codes,
/// `../shared/CONVENTIONS.md`).
public struct SuiteClientError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable for programs to switch on.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The server cannot be reached (no connection within the connect timeout, refused,
        /// no route, name not resolved, or no answer before the deadline) and there is no
        /// cached data to answer with. Exit 6.
        case offline
        /// The server's minimum client version is above this app's version. Exit 5.
        case updateRequired
        /// Nobody is signed in, the session ended, or the sign-in was refused. Exit 77.
        case signInRequired
        /// The thing asked for does not exist (reservation, customer, store). Exit 3.
        case notFound
        /// The request changed something that changed meanwhile (`version-mismatch`), or a
        /// status move the server does not allow (`invalid-transition`). Exit 1.
        case conflict
        /// A flag turns the action off for the store (`feature-disabled`). Exit 1.
        case featureDisabled
        /// The signed-in user's role or stores do not allow it (HTTP 403). Exit 13.
        case notPermitted
        /// Values broke the rules (client-side form check or the server's
        /// `validation-failed`); ``SuiteClientError/fieldErrors`` lists them. Exit 64.
        case validationFailed
        /// An argument cannot be used: not a reservation id or code, not a server URL. Exit 64.
        case invalidInput
        /// An input could not be read or held nothing usable (an image without a code). Exit 1.
        case unreadableInput
        /// Too many failed sign-ins; try again later. Exit 1.
        case rateLimited
        /// The server failed (5xx) or answered something the client cannot read. Exit 1.
        case server
        /// A local file (settings, cache, token file) could not be used. Exit 1.
        case storage
        /// The command was cancelled (SIGINT). Exit 130.
        case cancelled
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for people, naming the input or the server.
    public var message: String
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The server's problem document, when it sent one.
    public var problem: APIProblem?
    /// Field problems of a `validationFailed` error, in form order.
    public var fieldErrors: [APIProblem.FieldError]
    /// The underlying error, when there is one (never one that carries a secret).
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        status: Int? = nil,
        problem: APIProblem? = nil,
        fieldErrors: [APIProblem.FieldError] = [],
        cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.problem = problem
        self.fieldErrors = fieldErrors
        self.cause = cause
    }

    /// The process exit code for this error, per the suite's conventions.
    public var exitCode: Int32 {
        switch code {
        case .offline: 6
        case .updateRequired: 5
        case .signInRequired: 77
        case .notFound: 3
        case .notPermitted: 13
        case .validationFailed, .invalidInput: 64
        case .cancelled: 130
        case .conflict, .featureDisabled, .unreadableInput, .rateLimited, .server, .storage: 1
        }
    }

    /// The message, then one indented line per field problem.
    public var description: String {
        guard !fieldErrors.isEmpty else { return message }
        return ([message] + fieldErrors.map { "  \($0.field): \($0.message)" })
            .joined(separator: "\n")
    }
}
