public import Foundation

/// The one set of limits every part of the store agrees on: the JSON and property-list
/// parsers, ``SharedStore``'s commits and the store file's reader. A value the parsers accept
/// and a commit writes is always one the reader reads back, so an acknowledged write is
/// never lost to a limit; anything past them is refused before a byte is written.
public enum DefaultsLimits {
    /// How many arrays and dictionaries one value may nest: 100. A scalar nests 0 levels,
    /// `[1]` one, `{"a": [1]}` two. The suite's own top-level dictionary is not counted.
    public static let maximumNestingDepth = 100

    /// The largest store file, header included: 64 MiB. Every process of the suite reads
    /// the whole store, so it stays small; secrets, images and caches belong elsewhere.
    public static let maximumStoreBytes = 64 << 20

    /// The earliest date a value may hold: 0001-01-01T00:00:00Z (RFC 3339's first year).
    public static let earliestDate = Date(timeIntervalSince1970: -62_135_596_800)
    /// The latest date a value may hold: 9999-12-31T23:59:59Z (RFC 3339's last year).
    public static let latestDate = Date(timeIntervalSince1970: 253_402_300_799)

    /// How deeply `value` nests arrays and dictionaries (0 for a scalar).
    public static func nestingDepth(of value: DefaultsValue) -> Int {
        switch value {
        case .array(let elements): 1 + (elements.lazy.map(nestingDepth(of:)).max() ?? 0)
        case .dictionary(let entries): 1 + (entries.values.lazy.map(nestingDepth(of:)).max() ?? 0)
        default: 0
        }
    }

    /// Checks one value against the limits that do not depend on the rest of the suite.
    /// - Throws: ``DefaultsLimitError`` naming the limit and, when given, the key.
    public static func check(_ value: DefaultsValue, key: String? = nil) throws(DefaultsLimitError)
    {
        try check(value, depth: 0, key: key)
    }

    private static func check(_ value: DefaultsValue, depth: Int, key: String?)
        throws(DefaultsLimitError)
    {
        switch value {
        case .array(let elements):
            guard depth < maximumNestingDepth else { throw .tooDeep(key: key) }
            for element in elements { try check(element, depth: depth + 1, key: key) }
        case .dictionary(let entries):
            guard depth < maximumNestingDepth else { throw .tooDeep(key: key) }
            for element in entries.values { try check(element, depth: depth + 1, key: key) }
        case .date(let date):
            guard isStorable(date) else { throw .dateOutOfRange(key: key, date: date) }
        default: break
        }
    }

    /// Whether a date lies in the years 1 to 9999, which RFC 3339 text can express.
    static func isStorable(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds >= earliestDate.timeIntervalSince1970
            && seconds <= latestDate.timeIntervalSince1970 + 0.999_999
    }
}

/// A value past one of ``DefaultsLimits``: refused before anything is written.
public struct DefaultsLimitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which limit.
    public enum Limit: String, Sendable, Hashable {
        /// ``DefaultsLimits/maximumNestingDepth``.
        case nestingDepth
        /// ``DefaultsLimits/maximumStoreBytes``.
        case storeBytes
        /// ``DefaultsLimits/earliestDate`` ... ``DefaultsLimits/latestDate``.
        case dateRange
    }

    /// Which limit was passed.
    public var limit: Limit
    /// The key whose value passed it, when known.
    public var key: String?
    /// What is wrong and what the limit is, for people.
    public var message: String

    /// Creates an error.
    public init(limit: Limit, key: String?, message: String) {
        self.limit = limit
        self.key = key
        self.message = message
    }

    /// The message.
    public var description: String { message }

    static func tooDeep(key: String?) -> DefaultsLimitError {
        DefaultsLimitError(
            limit: .nestingDepth,
            key: key,
            message:
                "\(key.map { "the value for '\($0)'" } ?? "a value") nests arrays and dictionaries more than \(DefaultsLimits.maximumNestingDepth) levels deep (the limit of a suite's values)"
        )
    }

    static func dateOutOfRange(key: String?, date: Date) -> DefaultsLimitError {
        DefaultsLimitError(
            limit: .dateRange,
            key: key,
            message:
                "\(key.map { "the value for '\($0)'" } ?? "a value") holds a date outside the years 1 to 9999 (\(date.timeIntervalSince1970) s since 1970), which a suite cannot store"
        )
    }

    static func storeTooLarge(bytes: Int) -> DefaultsLimitError {
        DefaultsLimitError(
            limit: .storeBytes,
            key: nil,
            message:
                "the suite would take \(bytes) bytes, more than the limit of \(DefaultsLimits.maximumStoreBytes) bytes (64 MiB) for a suite's settings"
        )
    }
}
