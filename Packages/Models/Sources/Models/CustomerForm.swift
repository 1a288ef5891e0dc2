internal import Foundation

/// One field of the customer form.
///
/// Rules: `name` 1–64 letters, digits or `_`, starting with a letter; `label` non-empty, single
/// line, at most 200 characters; `pattern` a regular expression (Swift `Regex` syntax) that
/// must match the whole value; `choice` fields need a non-empty list of distinct `options`,
/// other kinds must not have options; `maxLength` 1…2000 (default 200, 2000 for
/// `multilineText`).
public struct FormField: Sendable, Hashable, Codable {
    /// What a field holds and how it is checked.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// One line of text.
        case text
        /// Several lines of text.
        case multilineText
        /// An e-mail address (``EmailAddress`` rules).
        case email
        /// A phone number, stored in E.164 (``PhoneNumber`` rules).
        case phone
        /// A calendar date, `YYYY-MM-DD`.
        case date
        /// A decimal number, `-12.5`.
        case number
        /// One of ``FormField/options``.
        case choice
        /// `true` or `false`.
        case boolean
    }

    /// The key the value is stored under.
    public var name: String
    /// What the user sees.
    public var label: String
    /// What it holds.
    public var kind: Kind
    /// Whether it must be filled in.
    public var required: Bool
    /// A regular expression the whole value must match, if any.
    public var pattern: String?
    /// The longest value accepted, in characters.
    public var maxLength: Int?
    /// The allowed values of a `choice` field.
    public var options: [String]?

    /// A field from its parts.
    public init(
        name: String,
        label: String,
        kind: Kind,
        required: Bool = false,
        pattern: String? = nil,
        maxLength: Int? = nil,
        options: [String]? = nil
    ) throws(ValidationError) {
        self.name = name
        self.label = label
        self.kind = kind
        self.required = required
        self.pattern = pattern
        self.maxLength = maxLength
        self.options = options
        try validate()
    }

    /// The limit that applies: ``maxLength`` or the kind's default.
    public var effectiveMaxLength: Int {
        maxLength ?? (kind == .multilineText ? ModelLimits.noteLength : ModelLimits.nameLength)
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
            name.utf8.count <= 64,
            name.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
            })
        else {
            throw ValidationError(
                field: "name",
                code: .invalidFormat,
                reason:
                    "\"\(name.prefix(64))\" is not 1–64 letters, digits or _ starting with a letter"
            )
        }
        try Check.name(label, field: "label")
        if let maxLength, !(1...ModelLimits.noteLength).contains(maxLength) {
            throw ValidationError(
                field: "maxLength",
                code: .outOfRange,
                reason: "\(maxLength) is outside 1…2000"
            )
        }
        if let pattern {
            do { _ = try Regex(pattern) } catch {
                throw ValidationError(
                    field: "pattern",
                    code: .invalidFormat,
                    reason: "\"\(pattern.prefix(80))\" is not a valid regular expression"
                )
            }
        }
        if kind == .choice {
            guard let options, !options.isEmpty else {
                throw ValidationError(
                    field: "options",
                    code: .empty,
                    reason: "a choice field needs options"
                )
            }
            guard Set(options).count == options.count else {
                throw ValidationError(
                    field: "options",
                    code: .duplicate,
                    reason: "options must be distinct"
                )
            }
            for option in options { try Check.name(option, field: "options") }
        } else if options != nil {
            throw ValidationError(
                field: "options",
                code: .invalidFormat,
                reason: "only choice fields have options"
            )
        }
    }

    private enum CodingKeys: String, CodingKey {
        case name, label, kind, required, pattern, maxLength, options
    }

    /// Decodes and validates a field; `required` defaults to false.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        label = try c.decode(String.self, forKey: .label)
        let kindText = try c.decode(String.self, forKey: .kind)
        kind = try c.validating(.kind) { () throws(ValidationError) in
            guard let kind = Kind(rawValue: kindText) else {
                throw ValidationError(
                    field: "kind",
                    code: .unknownValue,
                    reason:
                        "\"\(kindText.prefix(30))\" is not one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            return kind
        }
        required = try c.decodeIfPresent(Bool.self, forKey: .required) ?? false
        pattern = try c.decodeIfPresent(String.self, forKey: .pattern)
        maxLength = try c.decodeIfPresent(Int.self, forKey: .maxLength)
        options = try c.decodeIfPresent([String].self, forKey: .options)
        do { try validate() } catch {
            throw c.wrapped(error, at: CodingKeys(stringValue: error.field))
        }
    }

    /// Checks one non-empty, trimmed value; returns it cleaned or the field's error.
    func check(_ value: String, defaultCallingCode: Int?) -> Result<String, FormFieldError> {
        func fail(_ code: FormFieldError.Code, _ message: String) -> Result<String, FormFieldError>
        {
            .failure(FormFieldError(field: name, code: code, message: "\(label) \(message)"))
        }
        if value.count > effectiveMaxLength {
            return fail(.tooLong, "is longer than \(effectiveMaxLength) characters")
        }
        var cleaned = value
        switch kind {
        case .text, .multilineText:
            if kind == .text, value.contains(where: \.isNewline) {
                return fail(.invalidText, "must be a single line")
            }
            let text =
                kind == .text ? TextSafety.lineProblem(value) : TextSafety.notesProblem(value)
            if let problem = text { return fail(.invalidText, problem) }
        case .email:
            guard let email = try? EmailAddress(value) else {
                return fail(.invalidEmail, "is not an e-mail address")
            }
            cleaned = email.value
        case .phone:
            guard let phone = try? PhoneNumber(value, defaultCallingCode: defaultCallingCode) else {
                return fail(.invalidPhone, "is not a phone number")
            }
            cleaned = phone.e164
        case .date:
            guard (try? RFC3339.date(from: value + "T00:00:00Z")) != nil, value.utf8.count == 10
            else {
                return fail(.invalidDate, "is not a date (YYYY-MM-DD)")
            }
        case .number:
            guard (try? Money.parseAmount(value)) != nil else {
                return fail(.invalidNumber, "is not a number")
            }
        case .choice:
            guard options?.contains(value) == true else {
                return fail(.notAnOption, "is not one of the options")
            }
        case .boolean:
            guard value == "true" || value == "false" else {
                return fail(.invalidBoolean, "must be true or false")
            }
        }
        if let pattern, let regex = try? Regex(pattern), (try? regex.wholeMatch(in: cleaned)) == nil
        {
            return fail(.patternMismatch, "does not have the required format")
        }
        return .success(cleaned)
    }
}

/// A problem with one value of a filled-in form.
public struct FormFieldError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong; stable, for programs to switch on.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A required field is empty.
        case missing
        /// Longer than the field allows.
        case tooLong
        /// Text that breaks a text rule (a newline in a one-line field).
        case invalidText
        /// Not an e-mail address.
        case invalidEmail
        /// Not a phone number.
        case invalidPhone
        /// Not a `YYYY-MM-DD` date that exists.
        case invalidDate
        /// Not a decimal number.
        case invalidNumber
        /// Not one of a choice field's options.
        case notAnOption
        /// Not `true` or `false`.
        case invalidBoolean
        /// Does not match the field's pattern.
        case patternMismatch
        /// A value for a field the form does not have.
        case unknownField
    }

    /// The field's name.
    public let field: String
    /// What is wrong.
    public let code: Code
    /// A sentence for the user, using the field's label.
    public let message: String

    /// `field: message`.
    public var description: String { "\(field): \(message)" }
}

/// The outcome of ``ClientConfiguration/validate(form:defaultCallingCode:)``.
public struct FormValidation: Sendable, Hashable {
    /// The accepted values, cleaned (empty optional fields left out).
    public let values: [String: String]
    /// Every problem found, in form order, then unknown fields by name.
    public let errors: [FormFieldError]
    /// True when there are no errors.
    public var isValid: Bool { errors.isEmpty }
}
