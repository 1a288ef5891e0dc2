import Foundation

/// A value that breaks one of the model rules, naming the field and what is wrong with it.
///
/// Constructors and `validate()` methods throw it directly. Decoding wraps it in
/// `DecodingError.dataCorrupted` with this error as the context's `underlyingError`;
/// ``ValidationError/init(_:)`` digs it out again. When thrown while decoding, ``field`` is
/// the dotted path from the decoded root (`items.3.endsAt`, `price.currency`); otherwise it is
/// the property name (`endsAt`).
public struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of rule the value broke; stable, for programs to switch on.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// A required value is empty or only whitespace.
        case empty
        /// A string is longer than its limit.
        case tooLong
        /// A number or instant is outside its allowed range.
        case outOfRange
        /// The text does not have the required shape.
        case invalidFormat
        /// A check digit or check symbol does not match.
        case invalidCheckDigit
        /// A calendar date or instant that does not exist (2026-02-30).
        case invalidDate
        /// Two fields are in the wrong order (an end before its start).
        case invalidOrder
        /// A value that is not one of the known values (a currency, a time zone, a flag type).
        case unknownValue
        /// A value that appears twice where it must be unique.
        case duplicate
    }

    /// The field the rule belongs to: a property name, or a dotted path when decoding.
    public var field: String
    /// The kind of rule that was broken.
    public var code: Code
    /// A human sentence describing the problem, naming the offending value when that is safe.
    public var reason: String

    /// Makes an error for `field`.
    public init(field: String, code: Code, reason: String) {
        self.field = field
        self.code = code
        self.reason = reason
    }

    /// Finds the validation error inside `error`: the error itself, or the underlying error of
    /// a `DecodingError.dataCorrupted`. Returns nil for any other error.
    public init?(_ error: any Error) {
        if let error = error as? ValidationError {
            self = error
            return
        }
        if case let DecodingError.dataCorrupted(context) = error,
            let underlying = context.underlyingError,
            let found = ValidationError(underlying)
        {
            self = found
            return
        }
        return nil
    }

    /// `field: reason`.
    public var description: String { "\(field): \(reason)" }

    /// The same error with `prefix` put in front of its field (`price` + `currency`).
    func prefixed(_ prefix: String) -> ValidationError {
        guard !prefix.isEmpty else { return self }
        var copy = self
        copy.field = field.isEmpty ? prefix : "\(prefix).\(field)"
        return copy
    }
}

/// Limits that the models share; documented in the README.
public enum ModelLimits {
    /// Names, titles and other single-line labels: at most this many characters.
    public static let nameLength = 200
    /// Free-text notes: at most this many characters.
    public static let noteLength = 2000
    /// Identifiers such as a SKU, market or region code: at most this many characters.
    public static let codeLength = 64
    /// A reservation's party size.
    public static let partySize = 1...50
    /// Optimistic-concurrency versions: positive and within the integers a JavaScript client
    /// reads exactly (2^53), so bumping never overflows.
    public static let version = 1...(1 << 53)
}

enum Check {
    /// A required single-line text: not blank, no control characters, at most `max` characters
    /// (and, `strict`, no bidi or C1 controls: see ``line(_:field:max:strict:)``).
    static func name(
        _ value: String,
        field: String,
        max: Int = ModelLimits.nameLength,
        strict: Bool = false
    ) throws(ValidationError) {
        if value.allSatisfy(\.isWhitespace) {
            throw ValidationError(field: field, code: .empty, reason: "must not be empty")
        }
        try line(value, field: field, max: max, strict: strict)
    }

    /// An optional single-line text of at most `max` characters.
    ///
    /// `strict` (what a client sends: new reservations, changes, form values) refuses every
    /// control character (C0, DEL, C1) and bidi control (``TextSafety/lineProblem(_:)``).
    /// Records as stored (read back from the database or the server) keep the rule they were
    /// written under, C0 and DEL only, so older data stays readable; apps escape what they
    /// print (``TextSafety/terminal(_:multiline:)``).
    static func line(
        _ value: String,
        field: String,
        max: Int = ModelLimits.nameLength,
        strict: Bool = false
    ) throws(ValidationError) {
        try length(value, field: field, max: max)
        if strict {
            if let problem = TextSafety.lineProblem(value) {
                throw ValidationError(field: field, code: .invalidFormat, reason: problem)
            }
            return
        }
        for scalar in value.unicodeScalars where scalar.value < 0x20 || scalar.value == 0x7F {
            throw ValidationError(
                field: field,
                code: .invalidFormat,
                reason: "must be a single line without control characters"
            )
        }
    }

    /// A free text of at most `max` characters; `strict` (what a client sends) allows
    /// newlines and tabs but no other control character and no bidi control
    /// (``TextSafety/notesProblem(_:)``). Stored records keep any text (see
    /// ``line(_:field:max:strict:)``).
    static func text(
        _ value: String,
        field: String,
        max: Int = ModelLimits.noteLength,
        strict: Bool = false
    ) throws(ValidationError) {
        try length(value, field: field, max: max)
        if strict, let problem = TextSafety.notesProblem(value) {
            throw ValidationError(field: field, code: .invalidFormat, reason: problem)
        }
    }

    static func length(_ value: String, field: String, max: Int) throws(ValidationError) {
        // UTF-8 length bounds the character count from above, so short strings skip counting.
        if value.utf8.count > max, value.count > max {
            throw ValidationError(
                field: field,
                code: .tooLong,
                reason: "is \(value.count) characters long, the limit is \(max)"
            )
        }
    }
}

extension KeyedDecodingContainer {
    /// Runs `body`, turning a ``ValidationError`` into `DecodingError.dataCorrupted` whose
    /// context names the full coding path and whose underlying error is the validation error
    /// with its field prefixed by that path.
    func validating<T>(_ key: Key, _ body: () throws(ValidationError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw wrapped(error, at: key)
        }
    }

    func wrapped(_ error: ValidationError, at key: Key?) -> DecodingError {
        let path = codingPath + (key.map { [$0] } ?? [])
        let prefix = codingPath.map(\.fieldComponent).joined(separator: ".")
        let full = error.prefixed(prefix)
        return DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: path,
                debugDescription: full.description,
                underlyingError: full
            )
        )
    }
}

extension SingleValueDecodingContainer {
    /// As `KeyedDecodingContainer.validating`, for values that decode from one string.
    func validating<T>(_ body: () throws(ValidationError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            let prefix = codingPath.map(\.fieldComponent).joined(separator: ".")
            var full = error
            if !prefix.isEmpty { full.field = prefix }
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: codingPath,
                    debugDescription: full.description,
                    underlyingError: full
                )
            )
        }
    }
}

extension CodingKey {
    var fieldComponent: String { intValue.map(String.init) ?? stringValue }
}
