public import Foundation

/// A value kept in a ``SharedStore``: the property-list types, as `UserDefaults` keeps them.
///
/// Integers and floating-point numbers are distinct cases (the store never turns `3` into
/// `3.0`), and dates and data keep their own types, so a value reads back exactly as it
/// was written.
public enum DefaultsValue: Sendable, Hashable {
    /// A UTF-8 string.
    case string(String)
    /// A signed 64-bit integer.
    case int(Int)
    /// A double-precision floating-point number.
    case double(Double)
    /// A boolean.
    case bool(Bool)
    /// An instant, kept to the full precision of `Date`.
    case date(Date)
    /// Raw bytes.
    case data(Data)
    /// An ordered list of values.
    case array([DefaultsValue])
    /// A dictionary of values by string key.
    case dictionary([String: DefaultsValue])

    /// The name of this value's type as `suite-defaults read-type` prints it (`string`,
    /// `integer`, `float`, `boolean`, `date`, `data`, `array`, `dictionary`).
    public var typeName: String {
        switch self {
        case .string: "string"
        case .int: "integer"
        case .double: "float"
        case .bool: "boolean"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, if this is an integer, a boolean (0 or 1) or a double with an exact
    /// integer value.
    public var intValue: Int? {
        switch self {
        case .int(let value): value
        case .bool(let value): value ? 1 : 0
        case .double(let value): Int(exactly: value)
        default: nil
        }
    }

    /// The number as a double, if this is a double or an integer.
    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .int(let value): Double(value)
        default: nil
        }
    }

    /// The boolean, if this is a boolean or the integer 0 or 1.
    public var boolValue: Bool? {
        switch self {
        case .bool(let value): value
        case .int(0): false
        case .int(1): true
        default: nil
        }
    }

    /// The date, if this is a date.
    public var dateValue: Date? {
        if case .date(let value) = self { return value }
        return nil
    }

    /// The bytes, if this is data.
    public var dataValue: Data? {
        if case .data(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [DefaultsValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The entries, if this is a dictionary.
    public var dictionaryValue: [String: DefaultsValue]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }
}

extension DefaultsValue: ExpressibleByStringLiteral {
    /// A string value from a literal.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension DefaultsValue: ExpressibleByIntegerLiteral {
    /// An integer value from a literal.
    public init(integerLiteral value: Int) { self = .int(value) }
}

extension DefaultsValue: ExpressibleByFloatLiteral {
    /// A double value from a literal.
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension DefaultsValue: ExpressibleByBooleanLiteral {
    /// A boolean value from a literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension DefaultsValue: ExpressibleByArrayLiteral {
    /// An array value from a literal.
    public init(arrayLiteral elements: DefaultsValue...) { self = .array(elements) }
}

extension DefaultsValue: ExpressibleByDictionaryLiteral {
    /// A dictionary value from a literal; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, DefaultsValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

// MARK: - Typed conversion

/// A Swift type that converts to and from a ``DefaultsValue`` without loss: `String`, `Int`,
/// `Double`, `Bool`, `Date`, `Data`, and arrays and dictionaries of them.
public protocol DefaultsValueConvertible: Sendable {
    /// The stored form of this value.
    var defaultsValue: DefaultsValue { get }
    /// Reads a value of this type back, or `nil` when the stored value has another type.
    init?(defaultsValue: DefaultsValue)
}

extension DefaultsValue: DefaultsValueConvertible {
    /// The value itself.
    public var defaultsValue: DefaultsValue { self }
    /// The value itself.
    public init?(defaultsValue: DefaultsValue) { self = defaultsValue }
}

extension String: DefaultsValueConvertible {
    /// `.string(self)`.
    public var defaultsValue: DefaultsValue { .string(self) }
    /// The string of a `.string` value.
    public init?(defaultsValue: DefaultsValue) {
        guard let value = defaultsValue.stringValue else { return nil }
        self = value
    }
}

extension Int: DefaultsValueConvertible {
    /// `.int(self)`.
    public var defaultsValue: DefaultsValue { .int(self) }
    /// The integer of an `.int` value (see ``DefaultsValue/intValue``).
    public init?(defaultsValue: DefaultsValue) {
        guard let value = defaultsValue.intValue else { return nil }
        self = value
    }
}

extension Double: DefaultsValueConvertible {
    /// `.double(self)`.
    public var defaultsValue: DefaultsValue { .double(self) }
    /// The number of a `.double` or `.int` value.
    public init?(defaultsValue: DefaultsValue) {
        guard let value = defaultsValue.doubleValue else { return nil }
        self = value
    }
}

extension Bool: DefaultsValueConvertible {
    /// `.bool(self)`.
    public var defaultsValue: DefaultsValue { .bool(self) }
    /// The boolean of a `.bool` value, or of the integers 0 and 1.
    public init?(defaultsValue: DefaultsValue) {
        guard let value = defaultsValue.boolValue else { return nil }
        self = value
    }
}

extension Date: DefaultsValueConvertible {
    /// `.date(self)`.
    public var defaultsValue: DefaultsValue { .date(self) }
    /// The date of a `.date` value.
    public init?(defaultsValue: DefaultsValue) {
        guard let value = defaultsValue.dateValue else { return nil }
        self = value
    }
}

extension Data: DefaultsValueConvertible {
    /// `.data(self)`.
    public var defaultsValue: DefaultsValue { .data(self) }
    /// The bytes of a `.data` value.
    public init?(defaultsValue: DefaultsValue) {
        guard let value = defaultsValue.dataValue else { return nil }
        self = value
    }
}

extension Array: DefaultsValueConvertible where Element: DefaultsValueConvertible {
    /// `.array` of the elements' values.
    public var defaultsValue: DefaultsValue { .array(map(\.defaultsValue)) }
    /// The elements of an `.array` value, when every element converts.
    public init?(defaultsValue: DefaultsValue) {
        guard let elements = defaultsValue.arrayValue else { return nil }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let converted = Element(defaultsValue: element) else { return nil }
            result.append(converted)
        }
        self = result
    }
}

extension Dictionary: DefaultsValueConvertible
where Key == String, Value: DefaultsValueConvertible {
    /// `.dictionary` of the entries' values.
    public var defaultsValue: DefaultsValue { .dictionary(mapValues(\.defaultsValue)) }
    /// The entries of a `.dictionary` value, when every entry converts.
    public init?(defaultsValue: DefaultsValue) {
        guard let entries = defaultsValue.dictionaryValue else { return nil }
        var result: [String: Value] = [:]
        result.reserveCapacity(entries.count)
        for (key, entry) in entries {
            guard let converted = Value(defaultsValue: entry) else { return nil }
            result[key] = converted
        }
        self = result
    }
}

// MARK: - Codable

extension DefaultsValue: Codable {
    /// Decodes from JSON-like containers: strings, integers, doubles, booleans, arrays and
    /// objects (dates and data arrive as whatever the decoder gives: strings or numbers).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([DefaultsValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: DefaultsValue].self) {
            self = .dictionary(value)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "not a string, number, boolean, array or object"
            )
        }
    }

    /// Encodes as the matching JSON-like value; dates and data use the encoder's own
    /// strategies.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .date(let value): try container.encode(value)
        case .data(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .dictionary(let value): try container.encode(value)
        }
    }
}
