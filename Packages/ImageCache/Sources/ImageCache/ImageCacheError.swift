import Foundation

/// Why an ImageCache operation failed.
///
/// Messages name the URL or file involved and never carry request headers (which may hold
/// credentials when the transport signs requests).
public struct ImageCacheError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, stable for programs to switch on.
    public enum Code: String, Sendable, Hashable {
        /// A parameter is out of range (a size limit of zero, a relative directory, ...).
        case invalidConfiguration
        /// A system call on the cache folder failed (the `errno` is kept).
        case ioFailure
        /// An entry is larger than the disk cache's whole size limit, so it is not stored.
        case entryTooLarge
        /// Other writers' in-flight entries hold the space this one needs; nothing was
        /// stored (try again later).
        case cacheBusy
        /// The request allowed only cached data and none is cached.
        case notCached
        /// The transport failed (offline, refused, timed out, signed out) and nothing usable
        /// is cached. ``cause`` holds the transport's error.
        case transportFailed
        /// The server answered with an HTTP status that carries no image (``status``).
        case httpStatus
        /// The server's answer cannot be used (a 304 for a request that was not
        /// conditional, for example).
        case invalidResponse
        /// The decoder refused the bytes (``cause`` holds its error).
        case decodingFailed
        /// Every requester cancelled, or the calling task was cancelled.
        case cancelled
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The image URL (or cache key) involved, when there is one.
    public var url: String?
    /// The file or directory involved, when there is one.
    public var path: String?
    /// The HTTP status, for ``Code/httpStatus``.
    public var status: Int?
    /// The `errno` of a failed system call, when there is one.
    public var errno: Int32?
    /// The underlying error (the transport's or decoder's), when there is one.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(
        code: Code,
        message: String,
        url: String? = nil,
        path: String? = nil,
        status: Int? = nil,
        errno: Int32? = nil,
        cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.url = url
        self.path = path
        self.status = status
        self.errno = errno
        self.cause = cause
    }

    /// The message, with the system's text for `errno` and the cause when there are ones.
    public var description: String {
        var text = message
        if let errno { text += ": " + String(cString: strerror(errno)) }
        if let cause { text += " (\(cause))" }
        return text
    }

    static func system(_ what: String, path: String, errno: Int32 = Foundation.errno)
        -> ImageCacheError
    {
        ImageCacheError(code: .ioFailure, message: "\(what) \(path)", path: path, errno: errno)
    }

    static func cancelled(_ url: String) -> ImageCacheError {
        ImageCacheError(code: .cancelled, message: "loading \(url) was cancelled", url: url)
    }
}
