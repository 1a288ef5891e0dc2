internal import Glibc
public import Plumbing

/// Why a ``SharedStore`` or ``SuiteContainer`` operation failed.
public struct SharedStoreError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, stable for programs to switch on.
    public enum Code: String, Sendable, Hashable {
        /// The suite name is empty, too long, or has characters other than letters, digits,
        /// `.`, `_` and `-` (or starts with `.`).
        case invalidSuiteName
        /// The container root or a suite container is writable by another user, owned by
        /// another user, or not a directory; the store refuses to use it.
        case insecureContainer
        /// A system call on the container or the store failed (the `errno` is kept).
        case ioFailure
        /// A value has another type than the operation needs (for example `increment` of
        /// a string).
        case typeMismatch
        /// An increment would overflow a 64-bit integer.
        case overflow
        /// A value could not be encoded or decoded (Codable helpers).
        case coding
        /// The system refused to start change notifications (inotify).
        case notificationsUnavailable
        /// A value passes one of ``DefaultsLimits`` (nesting, size, date range); nothing was
        /// written. The ``SharedStoreError/cause`` is the ``DefaultsLimitError``.
        case limitExceeded
        /// Another process held the suite's lock for longer than the store's lock timeout;
        /// nothing was written.
        case lockTimeout
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong, naming the path or key, for people.
    public var message: String
    /// The file or directory involved, when there is one.
    public var path: String?
    /// The `errno` of a failed system call, when there is one.
    public var errno: Int32?
    /// The underlying error (a Codable error, for example), when there is one.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(
        code: Code,
        message: String,
        path: String? = nil,
        errno: Int32? = nil,
        cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
        self.cause = cause
    }

    /// The message, with the system's text for `errno` when there is one.
    public var description: String {
        guard let errno else { return message }
        return "\(message): \(String(cString: strerror(errno)))"
    }

    static func system(_ what: String, path: String, errno: Int32 = Glibc.errno) -> SharedStoreError
    {
        SharedStoreError(code: .ioFailure, message: "\(what) \(path)", path: path, errno: errno)
    }
}

extension SharedStoreError {
    /// A container failure as the store reports it (`invalidSuiteName`,
    /// `insecureContainer`, `ioFailure`).
    public init(_ error: ContainerError) {
        let code: Code =
            switch error.code {
            case .invalidSuiteName: .invalidSuiteName
            case .insecure: .insecureContainer
            case .system: .ioFailure
            }
        self.init(code: code, message: error.message, path: error.path, errno: error.errno)
    }
}
