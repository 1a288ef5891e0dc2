public import Foundation
public import Models
internal import SQLKit
internal import Synchronization

/// The stored client configuration: every flag with its overrides, the customer form, the
/// minimum versions per app (`*` for apps without their own), and the config version.
public struct ConfigSnapshot: Sendable, Equatable {
    /// The configuration's version; every change bumps it.
    public var version: SemanticVersion
    /// Flags by name.
    public var flags: [String: FeatureFlag]
    /// The customer form.
    public var formFields: [FormField]
    /// Minimum client versions by app name; `*` applies to apps without an entry.
    public var minimumVersions: [String: SemanticVersion]

    /// The minimum version for `app`.
    public func minimumVersion(for app: String) -> SemanticVersion {
        minimumVersions[app] ?? minimumVersions["*"] ?? SemanticVersion(0, 0, 0)
    }

    /// The configuration as the app `app` sees it.
    public func configuration(for app: String) throws(ValidationError) -> ClientConfiguration {
        try ClientConfiguration(
            configVersion: version,
            minimumClientVersion: minimumVersion(for: app),
            featureFlags: flags,
            customerFormFields: formFields
        )
    }

    /// A flag's value for a store, falling back to the known default.
    public func value(_ name: String, for store: Store?) -> FlagValue? {
        let target = store.map { FlagTarget(store: $0) } ?? .global
        return flags[name]?.value(for: target) ?? KnownFlag.defaults[name]
    }

    /// A boolean flag for a store (its default when missing or not a boolean).
    public func isEnabled(_ name: String, for store: Store?) -> Bool {
        if case .bool(let value) = value(name, for: store) { return value }
        if case .bool(let value) = KnownFlag.defaults[name] { return value }
        return false
    }

    /// A number flag for a store.
    public func number(_ name: String, for store: Store?) -> Double? {
        if case .number(let value) = value(name, for: store) { return value }
        return nil
    }
}

/// An error of a configuration change, naming the input.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// A message naming the flag, app, file or value.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// Reads and changes the stored configuration; caches it per config version so a request
/// costs one small query, and every instance sees a change at its next request.
public final class ConfigService: Sendable {
    let database: StoreDatabase
    private let cache = Mutex<ConfigSnapshot?>(nil)

    /// A service on `database`.
    public init(database: StoreDatabase) { self.database = database }

    static let defaultForm: [FormField] = [
        try! FormField(name: "givenName", label: "First name", kind: .text, required: true),
        try! FormField(name: "familyName", label: "Last name", kind: .text, required: true),
        try! FormField(name: "email", label: "E-mail", kind: .email),
        try! FormField(name: "phone", label: "Phone", kind: .phone),
        try! FormField(name: "note", label: "Note", kind: .multilineText),
    ]

    /// Creates the configuration row and the known flags' defaults when missing.
    func ensureDefaults() async throws {
        let form = String(
            decoding: try JSONEncoder.shopfloor.encode(Self.defaultForm),
            as: UTF8.self
        )
        try await database.sql.raw(
            """
            INSERT INTO config_state (id, config_version, form_fields, updated_at)
            VALUES (1, '1.0.0', \(bind: form), \(bind: DBTime.millis(Date())))
            ON CONFLICT (id) DO NOTHING
            """
        ).run()
        for (name, value) in KnownFlag.defaults.sorted(by: { $0.key < $1.key }) {
            try await database.sql.raw(
                """
                INSERT INTO config_flags (name, scope, target, value) VALUES (\(bind: name), 'default', '', \(bind: Self.json(value)))
                ON CONFLICT (name, scope, target) DO NOTHING
                """
            ).run()
        }
    }

    /// The current configuration (one query when unchanged since the last call).
    public func current() async throws -> ConfigSnapshot {
        let row = try await database.sql.raw("SELECT config_version FROM config_state WHERE id = 1")
            .first()
        let versionText = try row?.string("config_version") ?? "1.0.0"
        if let cached = cache.withLock({ $0 }), cached.version.description == versionText {
            return cached
        }
        let snapshot = try await load(database.sql)
        cache.withLock { $0 = snapshot }
        return snapshot
    }

    func load(_ sql: any SQLDatabase) async throws -> ConfigSnapshot {
        guard
            let state = try await sql.raw(
                "SELECT config_version, form_fields FROM config_state WHERE id = 1"
            ).first()
        else {
            return ConfigSnapshot(
                version: SemanticVersion(1, 0, 0),
                flags: [:],
                formFields: Self.defaultForm,
                minimumVersions: [:]
            )
        }
        let version = try SemanticVersion(parsing: state.string("config_version"))
        let form = try JSONDecoder.shopfloor.decode(
            [FormField].self,
            from: Data(state.string("form_fields").utf8)
        )
        var flags: [String: FeatureFlag] = [:]
        for row in try await sql.raw(
            "SELECT name, scope, target, value FROM config_flags ORDER BY name, scope, target"
        ).all() {
            let name = try row.string("name")
            let value = try JSONDecoder.shopfloor.decode(
                FlagValue.self,
                from: Data(row.string("value").utf8)
            )
            let target = try row.string("target")
            var flag = flags[name] ?? FeatureFlag(defaultValue: KnownFlag.defaults[name] ?? value)
            switch try row.string("scope") {
            case "default": flag.defaultValue = value
            case "market": flag.markets[target] = value
            case "region": flag.regions[target] = value
            case "store":
                if let id = UUID(uuidString: target) { flag.stores[id] = value }
            default: continue
            }
            flags[name] = flag
        }
        var minimums: [String: SemanticVersion] = [:]
        for row in try await sql.raw("SELECT app, minimum_version FROM config_app_versions").all() {
            minimums[try row.string("app")] = try SemanticVersion(
                parsing: row.string("minimum_version")
            )
        }
        return ConfigSnapshot(
            version: version,
            flags: flags,
            formFields: form,
            minimumVersions: minimums
        )
    }

    /// Where a flag value applies.
    public enum Scope: Sendable, Equatable {
        /// The global default.
        case global
        /// A market (`DE`).
        case market(String)
        /// A region (`DE-BE`).
        case region(String)
        /// One store.
        case store(UUID)
    }

    /// Sets a flag's value for a scope and bumps the config version. A new flag must first
    /// get its global default; an override must have the default's type.
    @discardableResult
    public func setFlag(_ name: String, value: FlagValue, scope: Scope) async throws
        -> ConfigSnapshot
    {
        try await change { sql, snapshot in
            var flag = snapshot.flags[name] ?? FeatureFlag(defaultValue: value)
            let scopeName: String
            let target: String
            switch scope {
            case .global:
                if let known = KnownFlag.defaults[name], known.typeName != value.typeName {
                    throw ConfigError(
                        "flag \(name) is a \(known.typeName); \(value) is a \(value.typeName)"
                    )
                }
                flag.defaultValue = value
                (scopeName, target) = ("default", "")
            case .market(let market):
                guard snapshot.flags[name] != nil else {
                    throw ConfigError(
                        "flag \(name) has no global default yet; set it without --market first"
                    )
                }
                flag.markets[market] = value
                (scopeName, target) = ("market", market)
            case .region(let region):
                guard snapshot.flags[name] != nil else {
                    throw ConfigError(
                        "flag \(name) has no global default yet; set it without --region first"
                    )
                }
                flag.regions[region] = value
                (scopeName, target) = ("region", region)
            case .store(let id):
                guard snapshot.flags[name] != nil else {
                    throw ConfigError(
                        "flag \(name) has no global default yet; set it without --store first"
                    )
                }
                guard
                    try await sql.raw("SELECT id FROM stores WHERE id = \(bind: id.uuidString)")
                        .first() != nil
                else {
                    throw ConfigError("store \(id.uuidString) does not exist")
                }
                flag.stores[id] = value
                (scopeName, target) = ("store", id.uuidString)
            }
            var flags = snapshot.flags
            flags[name] = flag
            do {
                _ = try ClientConfiguration(
                    configVersion: snapshot.version,
                    minimumClientVersion: snapshot.minimumVersion(for: "*"),
                    featureFlags: flags
                )
            } catch let error as ValidationError {
                throw ConfigError(
                    "flag \(name): \(error.field.replacingOccurrences(of: "featureFlags.\(name).", with: "")) \(error.reason)"
                )
            }
            try await sql.raw(
                """
                INSERT INTO config_flags (name, scope, target, value) VALUES (\(bind: name), \(bind: scopeName), \(bind: target), \(bind: Self.json(value)))
                ON CONFLICT (name, scope, target) DO UPDATE SET value = EXCLUDED.value
                """
            ).run()
        }
    }

    /// Sets the minimum version of `app` (`*` for every app without its own) and bumps the
    /// config version.
    @discardableResult
    public func setMinimumVersion(app: String, version: SemanticVersion) async throws
        -> ConfigSnapshot
    {
        guard app == "*" || Self.isValidAppName(app) else {
            throw ConfigError(
                "app name '\(app.prefix(64))' must be 1–64 letters, digits, '.', '_' or '-' (or '*')"
            )
        }
        return try await change { sql, _ in
            try await sql.raw(
                """
                INSERT INTO config_app_versions (app, minimum_version) VALUES (\(bind: app), \(bind: version.description))
                ON CONFLICT (app) DO UPDATE SET minimum_version = EXCLUDED.minimum_version
                """
            ).run()
        }
    }

    /// Replaces flags, form and minimum versions with an imported document (a
    /// `ClientConfiguration`, optionally with `minimumClientVersions` by app), bumping the
    /// config version to at least the imported one.
    @discardableResult
    public func importConfiguration(_ data: Data) async throws -> ConfigSnapshot {
        let configuration: ClientConfiguration
        do {
            configuration = try JSONDecoder.shopfloor.decode(ClientConfiguration.self, from: data)
        } catch {
            if let validation = ValidationError(error) {
                throw ConfigError("invalid configuration: \(validation)")
            }
            throw ConfigError("not a client configuration JSON document: \(Self.describe(error))")
        }
        struct Extra: Decodable { var minimumClientVersions: [String: SemanticVersion]? }
        let extra =
            (try? JSONDecoder.shopfloor.decode(Extra.self, from: data))?.minimumClientVersions
            ?? [:]
        for app in extra.keys where !(app == "*" || Self.isValidAppName(app)) {
            throw ConfigError("minimumClientVersions: app name '\(app.prefix(64))' is not valid")
        }
        return try await change(minimumVersion: configuration.configVersion) { sql, _ in
            try await sql.raw("DELETE FROM config_flags").run()
            for (name, flag) in configuration.featureFlags.sorted(by: { $0.key < $1.key }) {
                var rows: [(String, String, FlagValue)] = [("default", "", flag.defaultValue)]
                rows += flag.markets.map { ("market", $0.key, $0.value) }
                rows += flag.regions.map { ("region", $0.key, $0.value) }
                rows += flag.stores.map { ("store", $0.key.uuidString, $0.value) }
                for (scope, target, value) in rows {
                    try await sql.raw(
                        "INSERT INTO config_flags (name, scope, target, value) VALUES (\(bind: name), \(bind: scope), \(bind: target), \(bind: Self.json(value)))"
                    ).run()
                }
            }
            try await sql.raw("DELETE FROM config_app_versions").run()
            var minimums = extra
            minimums["*"] = configuration.minimumClientVersion
            for (app, version) in minimums.sorted(by: { $0.key < $1.key }) {
                try await sql.raw(
                    "INSERT INTO config_app_versions (app, minimum_version) VALUES (\(bind: app), \(bind: version.description))"
                ).run()
            }
            let form = String(
                decoding: try JSONEncoder.shopfloor.encode(configuration.customerFormFields),
                as: UTF8.self
            )
            try await sql.raw("UPDATE config_state SET form_fields = \(bind: form) WHERE id = 1")
                .run()
        }
    }

    /// Runs a change in one transaction and bumps the version (patch + 1, or to
    /// `minimumVersion` when that is higher).
    private func change(
        minimumVersion: SemanticVersion? = nil,
        _ body: @Sendable @escaping (any SQLDatabase, ConfigSnapshot) async throws -> Void
    ) async throws -> ConfigSnapshot {
        try await ensureDefaults()
        let snapshot = try await database.transaction { sql in
            let before = try await self.load(sql)
            try await body(sql, before)
            var next = SemanticVersion(
                before.version.major,
                before.version.minor,
                before.version.patch + 1
            )
            if let minimumVersion, minimumVersion > next { next = minimumVersion }
            try await sql.raw(
                "UPDATE config_state SET config_version = \(bind: next.description), updated_at = \(bind: DBTime.millis(Date())) WHERE id = 1"
            ).run()
            return try await self.load(sql)
        }
        cache.withLock { $0 = snapshot }
        return snapshot
    }

    static func isValidAppName(_ name: String) -> Bool { Associate.isValidUsername(name) }

    static func json(_ value: FlagValue) throws -> String {
        String(decoding: try JSONEncoder.shopfloor.encode(value), as: UTF8.self)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "missing key '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context),
            DecodingError.valueNotFound(_, let context):
            return "wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        case DecodingError.dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "not valid JSON"
                : "bad value at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        default: return "\(error)"
        }
    }
}
