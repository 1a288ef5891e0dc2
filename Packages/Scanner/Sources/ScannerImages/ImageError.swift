/// An error about one input, named as the caller named it: ``ImageError`` and ``OCRError``
/// describe themselves the same way, `<input>: <message> (<cause>)`.
public protocol InputError: Error, Sendable, CustomStringConvertible {
    /// The input, as the caller named it.
    var input: String { get }
    /// A human message naming the problem.
    var message: String { get }
    /// The underlying error or more detail, when there is one.
    var cause: String? { get }
}

extension InputError {
    /// `<input>: <message>`, with the cause when there is one.
    public var description: String {
        if let cause { return "\(input): \(message) (\(cause))" }
        return "\(input): \(message)"
    }
}

/// Why an image could not be made into an ``ImageBuffer``.
public struct ImageError: InputError, Equatable {
    /// What went wrong, stable for callers to switch on.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// The input has no bytes.
        case empty
        /// The bytes are not an image in a known format (PNG, JPEG, WebP, TIFF, GIF, PNM, BMP).
        case notAnImage
        /// A known format, but the data ends early.
        case truncated
        /// A known format, but the decoder rejected the data.
        case corrupt
        /// The header announces more pixels than the limit allows; nothing was decoded.
        case tooLarge
        /// The file could not be read (missing, a directory, no permission, ...).
        case unreadable
        /// Pixels given directly do not match the width, height, stride and format given.
        case invalidPixels
        /// Memory for the pixels could not be allocated.
        case outOfMemory
        /// An image file could not be written (``ImageBuffer/writePNG(to:)``).
        case unwritable
    }

    /// What went wrong.
    public var code: Code
    /// The input, as the caller named it (a path, `-`, or a description such as `data`).
    public var input: String
    /// A human message naming the problem.
    public var message: String
    /// The underlying error, such as the file system's, when there is one.
    public var cause: String?

    /// Creates an error.
    public init(code: Code, input: String, message: String, cause: String? = nil) {
        self.code = code
        self.input = input
        self.message = message
        self.cause = cause
    }
}
