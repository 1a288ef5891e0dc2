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
