public import Foundation

/// The configuration the server hands every client app: versions, feature flags and the
/// customer form.
///
/// **Flag precedence.** For a given store, a flag's value is the first that exists of:
/// 1. the override for the store's id (`stores`),
/// 2. the override for its region (`regions`),
/// 3. the override for its market (`markets`),
/// 4. the flag's `defaultValue` (global).
///
/// Every override must have the same type (bool, string or number) as the default; decoding
/// rejects mismatches, duplicate form field names, choice fields without options and
/// validation patterns that do not compile.
///
/// JSON example:
///
///     {"configVersion": "3.1.0", "minimumClientVersion": "1.4.0",
///      "featureFlags": {"expressCheckout": {"defaultValue": false, "markets": {"DE": true},
///                       "stores": {"6F1C…": false}}},
///      "customerFormFields": [{"name": "email", "label": "E-mail", "kind": "email",
///                              "required": true}]}
public struct ClientConfiguration: Sendable, Hashable, Codable {
    /// The configuration's own version; clients cache by it.
    public var configVersion: SemanticVersion
    /// Clients older than this must update before they may talk to the server.
    public var minimumClientVersion: SemanticVersion
    /// Flags by key.
    public var featureFlags: [String: FeatureFlag]
    /// The fields of the customer form, in display order.
    public var customerFormFields: [FormField]

    /// Makes and validates a configuration.
    public init(
        configVersion: SemanticVersion,
        minimumClientVersion: SemanticVersion,
        featureFlags: [String: FeatureFlag] = [:],
        customerFormFields: [FormField] = []
    ) throws(ValidationError) {
        self.configVersion = configVersion
        self.minimumClientVersion = minimumClientVersion
        self.featureFlags = featureFlags
        self.customerFormFields = customerFormFields
        try validate()
    }

    /// True when `clientVersion` is below ``minimumClientVersion`` (by semver precedence, so
    /// `1.4.0-beta.2` is below `1.4.0`).
    public func requiresUpdate(clientVersion: SemanticVersion) -> Bool {
        clientVersion < minimumClientVersion
    }

    /// Every flag's value for the target, resolved by the documented precedence.
    public func flags(for target: FlagTarget) -> [String: FlagValue] {
        featureFlags.mapValues { $0.value(for: target) }
    }

    /// Every flag's value for a store given by its parts; any part may be nil.
    public func flags(for storeID: UUID?, market: String?, region: String?) -> [String: FlagValue] {
        flags(for: FlagTarget(storeID: storeID, market: market, region: region))
    }

    /// One flag's value for the target, or nil when no flag has that key.
    public func value(of key: String, for target: FlagTarget) -> FlagValue? {
        featureFlags[key]?.value(for: target)
    }

    /// A boolean flag's value; false when the flag is missing or not a boolean.
    public func isEnabled(_ key: String, for target: FlagTarget) -> Bool {
        if case .bool(true) = value(of: key, for: target) { return true }
        return false
    }

    /// Checks a filled-in customer form against ``customerFormFields``.
    ///
    /// `values` maps field names to what the user typed. Returns every problem at once (a UI
    /// marks all bad fields) and the cleaned values (trimmed; e-mail domain lowercased; phone
    /// numbers in E.164, national numbers read with `defaultCallingCode`).
    public func validate(form values: [String: String], defaultCallingCode: Int? = nil)
        -> FormValidation
    {
        var errors: [FormFieldError] = []
        var cleaned: [String: String] = [:]
        for field in customerFormFields {
            let raw = values[field.name]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if raw.isEmpty {
                if field.required {
                    errors.append(
                        FormFieldError(
                            field: field.name,
                            code: .missing,
                            message: "\(field.label) is required"
                        )
                    )
                }
                continue
            }
            switch field.check(raw, defaultCallingCode: defaultCallingCode) {
            case let .success(value): cleaned[field.name] = value
            case let .failure(error): errors.append(error)
            }
        }
        let known = Set(customerFormFields.map(\.name))
        for name in values.keys.sorted() where !known.contains(name) {
            errors.append(
                FormFieldError(
                    field: name,
                    code: .unknownField,
                    message: "\(name) is not a field of this form"
                )
            )
        }
        return FormValidation(values: cleaned, errors: errors)
    }

    /// Checks the rules in the type's documentation.
    public func validate() throws(ValidationError) {
        for key in featureFlags.keys.sorted() {
            guard FeatureFlag.isValidKey(key) else {
                throw ValidationError(
                    field: "featureFlags.\(key.prefix(64))",
                    code: .invalidFormat,
                    reason:
                        "flag keys are 1–64 letters, digits, '.', '_' or '-', starting with a letter"
                )
            }
            do { try featureFlags[key]!.validate() } catch {
                throw error.prefixed("featureFlags.\(key)")
            }
        }
        var names: Set<String> = []
        for (index, field) in customerFormFields.enumerated() {
            do { try field.validate() } catch {
                throw error.prefixed("customerFormFields.\(index)")
            }
            guard names.insert(field.name).inserted else {
                throw ValidationError(
                    field: "customerFormFields.\(index).name",
                    code: .duplicate,
                    reason: "\"\(field.name)\" is used twice"
                )
            }
        }
    }

    private enum CodingKeys: String, CodingKey {
        case configVersion, minimumClientVersion, featureFlags, customerFormFields
    }

    /// Decodes and validates a configuration; unknown keys are ignored, missing flag and field
    /// lists are empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        configVersion = try c.decode(SemanticVersion.self, forKey: .configVersion)
        minimumClientVersion = try c.decode(SemanticVersion.self, forKey: .minimumClientVersion)
        featureFlags =
            try c.decodeIfPresent([String: FeatureFlag].self, forKey: .featureFlags) ?? [:]
        customerFormFields =
            try c.decodeIfPresent([FormField].self, forKey: .customerFormFields) ?? []
        do { try validate() } catch { throw c.wrapped(error, at: nil) }
    }
}

/// What a flag is resolved for: a store's id, market and region, each optional.
public struct FlagTarget: Sendable, Hashable {
    /// The store's id.
    public var storeID: UUID?
    /// The store's market.
    public var market: String?
    /// The store's region.
    public var region: String?

    /// A target from its parts.
    public init(storeID: UUID? = nil, market: String? = nil, region: String? = nil) {
        self.storeID = storeID
        self.market = market
        self.region = region
    }

    /// The target for `store`.
    public init(store: Store) {
        self.init(storeID: store.id, market: store.market, region: store.region)
    }

    /// No store: every flag resolves to its default.
    public static let global = FlagTarget()
}

/// A feature flag's value. JSON holds the plain value: `true`, `"blue"`, `2.5`.
public enum FlagValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// On or off.
    case bool(Bool)
    /// A text value (a variant name, a URL).
    case string(String)
    /// A number (a limit, a percentage).
    case number(Double)

    /// `bool`, `string` or `number`.
    public var typeName: String {
        switch self {
        case .bool: return "bool"
        case .string: return "string"
        case .number: return "number"
        }
    }

    /// The value as JSON would show it.
    public var description: String {
        switch self {
        case let .bool(value): return String(value)
        case let .string(value): return "\"\(value)\""
        case let .number(value):
            return value == value.rounded() && abs(value) < 1e15
                ? String(Int64(value)) : String(value)
        }
    }

    /// Decodes a JSON boolean, number or string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            throw DecodingError.typeMismatch(
                FlagValue.self,
                DecodingError.Context(
                    codingPath: container.codingPath,
                    debugDescription: "a flag value is a boolean, number or string"
                )
            )
        }
    }

    /// Encodes the plain value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .bool(value): try container.encode(value)
        case let .string(value): try container.encode(value)
        case let .number(value): try container.encode(value)
        }
    }
}

/// One feature flag: a global default and overrides by market, region and store.
public struct FeatureFlag: Sendable, Hashable, Codable {
    /// The value when no override applies.
    public var defaultValue: FlagValue
    /// Overrides by market code.
    public var markets: [String: FlagValue]
    /// Overrides by region code.
    public var regions: [String: FlagValue]
    /// Overrides by store id.
    public var stores: [UUID: FlagValue]

    /// A flag from its parts.
    public init(
        defaultValue: FlagValue,
        markets: [String: FlagValue] = [:],
        regions: [String: FlagValue] = [:],
        stores: [UUID: FlagValue] = [:]
    ) {
        self.defaultValue = defaultValue
        self.markets = markets
        self.regions = regions
        self.stores = stores
    }

    /// The value for `target`: store, then region, then market, then the default.
    public func value(for target: FlagTarget) -> FlagValue {
        if let id = target.storeID, let value = stores[id] { return value }
        if let region = target.region, let value = regions[region] { return value }
        if let market = target.market, let value = markets[market] { return value }
        return defaultValue
    }

    static func isValidKey(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII,
            key.utf8.count <= 64
        else {
            return false
        }
        return key.unicodeScalars.allSatisfy {
            $0.isASCII
                && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                    || "._-".unicodeScalars.contains($0))
        }
    }

    /// Every override has the default's type; market and region codes are well formed.
    public func validate() throws(ValidationError) {
        let expected = defaultValue.typeName
        func check(_ value: FlagValue, _ field: String) throws(ValidationError) {
            guard value.typeName == expected else {
                throw ValidationError(
                    field: field,
                    code: .invalidFormat,
                    reason: "is a \(value.typeName) but the default is a \(expected)"
                )
            }
        }
        for (market, value) in markets.sorted(by: { $0.key < $1.key }) {
            try Store.checkCode(market, field: "markets.\(market)")
            try check(value, "markets.\(market)")
        }
        for (region, value) in regions.sorted(by: { $0.key < $1.key }) {
            try Store.checkCode(region, field: "regions.\(region)")
            try check(value, "regions.\(region)")
        }
        for (store, value) in stores.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            try check(value, "stores.\(store.uuidString)")
        }
    }

    private enum CodingKeys: String, CodingKey { case defaultValue, markets, regions, stores }

    /// Decodes a flag; `stores` keys must be UUIDs; missing override maps are empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        defaultValue = try c.decode(FlagValue.self, forKey: .defaultValue)
        markets = try c.decodeIfPresent([String: FlagValue].self, forKey: .markets) ?? [:]
        regions = try c.decodeIfPresent([String: FlagValue].self, forKey: .regions) ?? [:]
        let byText = try c.decodeIfPresent([String: FlagValue].self, forKey: .stores) ?? [:]
        var stores: [UUID: FlagValue] = [:]
        for (text, value) in byText {
            guard let id = UUID(uuidString: text) else {
                throw c.wrapped(
                    ValidationError(
                        field: "stores.\(text.prefix(40))",
                        code: .invalidFormat,
                        reason: "is not a store UUID"
                    ),
                    at: .stores
                )
            }
            stores[id] = value
        }
        self.stores = stores
    }

    /// Encodes the flag; empty override maps are left out, store ids as UUID strings.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(defaultValue, forKey: .defaultValue)
        if !markets.isEmpty { try c.encode(markets, forKey: .markets) }
        if !regions.isEmpty { try c.encode(regions, forKey: .regions) }
        if !stores.isEmpty {
            try c.encode(
                Dictionary(uniqueKeysWithValues: stores.map { ($0.key.uuidString, $0.value) }),
                forKey: .stores
            )
        }
    }
}

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
            let text = kind == .text ? TextSafety.lineProblem(value) : TextSafety.notesProblem(value)
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
