import Foundation

/// A version number per Semantic Versioning 2.0.0: `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`.
///
/// Parsing is strict (no `v` prefix, no leading zeros in numeric parts, identifiers of
/// `[0-9A-Za-z-]`). Ordering is semver precedence: numbers compare numerically; a pre-release
/// ranks below its release (`1.0.0-rc.1 < 1.0.0`); pre-release identifiers compare left to
/// right, numeric ones numerically and below alphanumeric ones, and a shorter list ranks lower
/// when all earlier identifiers are equal. Build metadata is kept and printed but ignored by
/// `<` and `==` (and hashing), as precedence requires. JSON holds the string.
public struct SemanticVersion: Sendable, Hashable, Comparable, Codable, CustomStringConvertible,
    LosslessStringConvertible
{
    /// One dot-separated pre-release identifier.
    public enum Identifier: Sendable, Hashable, Comparable, CustomStringConvertible {
        /// Digits only (no leading zero), compared numerically.
        case numeric(UInt64)
        /// Anything else, compared in ASCII order.
        case alphanumeric(String)

        /// Numeric identifiers rank below alphanumeric ones.
        public static func < (lhs: Identifier, rhs: Identifier) -> Bool {
            switch (lhs, rhs) {
            case let (.numeric(a), .numeric(b)): return a < b
            case (.numeric, .alphanumeric): return true
            case (.alphanumeric, .numeric): return false
            case let (.alphanumeric(a), .alphanumeric(b)):
                return Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
            }
        }

        /// The identifier as written.
        public var description: String {
            switch self {
            case let .numeric(value): return String(value)
            case let .alphanumeric(text): return text
            }
        }
    }

    /// Incompatible API changes.
    public var major: UInt64
    /// Compatible additions.
    public var minor: UInt64
    /// Compatible fixes.
    public var patch: UInt64
    /// Pre-release identifiers (`rc`, `1` in `1.0.0-rc.1`); empty for a release.
    public var prerelease: [Identifier]
    /// Build metadata (`build`, `5` in `1.0.0+build.5`); ignored for precedence.
    public var build: [String]

    /// A version from its parts.
    public init(
        _ major: UInt64,
        _ minor: UInt64,
        _ patch: UInt64,
        prerelease: [Identifier] = [],
        build: [String] = []
    ) {
        self.major = major
        self.minor = minor
        self.patch = patch
        self.prerelease = prerelease
        self.build = build
    }

    /// Parses a version string strictly; throws naming the problem.
    public init(parsing text: String) throws(ValidationError) {
        func bad(_ reason: String) -> ValidationError {
            ValidationError(
                field: "version",
                code: .invalidFormat,
                reason: "\"\(text.prefix(60))\" \(reason)"
            )
        }
        guard text.utf8.count <= 256 else { throw bad("is too long for a version") }
        var rest = Substring(text)
        var build: [String] = []
        if let plus = rest.firstIndex(of: "+") {
            build = rest[rest.index(after: plus)...].split(
                separator: ".",
                omittingEmptySubsequences: false
            ).map(String.init)
            rest = rest[..<plus]
            guard build.allSatisfy({ !$0.isEmpty && Self.isIdentifierText($0) }) else {
                throw bad("has empty or invalid build metadata")
            }
        }
        var prerelease: [Identifier] = []
        if let dash = rest.firstIndex(of: "-") {
            for part in rest[rest.index(after: dash)...].split(
                separator: ".",
                omittingEmptySubsequences: false
            ) {
                guard !part.isEmpty, Self.isIdentifierText(part) else {
                    throw bad("has an empty or invalid pre-release identifier")
                }
                if part.allSatisfy(\.isASCIIDigit) {
                    guard part == "0" || !part.hasPrefix("0"), let value = UInt64(part) else {
                        throw bad("has a numeric pre-release identifier with a leading zero")
                    }
                    prerelease.append(.numeric(value))
                } else {
                    prerelease.append(.alphanumeric(String(part)))
                }
            }
            rest = rest[..<dash]
        }
        let core = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard core.count == 3 else { throw bad("is not MAJOR.MINOR.PATCH") }
        var numbers: [UInt64] = []
        for part in core {
            guard !part.isEmpty, part.allSatisfy(\.isASCIIDigit),
                part == "0" || !part.hasPrefix("0"),
                let value = UInt64(part)
            else { throw bad("has \"\(part)\" where a number without leading zeros belongs") }
            numbers.append(value)
        }
        self.init(numbers[0], numbers[1], numbers[2], prerelease: prerelease, build: build)
    }

    /// Parses `description`, or nil.
    public init?(_ description: String) {
        guard let version = try? SemanticVersion(parsing: description) else { return nil }
        self = version
    }

    private static func isIdentifierText<S: StringProtocol>(_ text: S) -> Bool {
        text.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || byte == UInt8(ascii: "-")
        }
    }

    /// True for versions with pre-release identifiers.
    public var isPrerelease: Bool { !prerelease.isEmpty }

    /// `1.2.3-rc.1+build.5`.
    public var description: String {
        var text = "\(major).\(minor).\(patch)"
        if !prerelease.isEmpty {
            text += "-" + prerelease.map(\.description).joined(separator: ".")
        }
        if !build.isEmpty { text += "+" + build.joined(separator: ".") }
        return text
    }

    /// Semver precedence.
    public static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        if (lhs.major, lhs.minor, lhs.patch) != (rhs.major, rhs.minor, rhs.patch) {
            return (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }
        switch (lhs.prerelease.isEmpty, rhs.prerelease.isEmpty) {
        case (true, _): return false
        case (false, true): return true
        default: return lhs.prerelease.lexicographicallyPrecedes(rhs.prerelease)
        }
    }

    /// Equal precedence (build metadata ignored).
    public static func == (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) == (rhs.major, rhs.minor, rhs.patch)
            && lhs.prerelease == rhs.prerelease
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(major)
        hasher.combine(minor)
        hasher.combine(patch)
        hasher.combine(prerelease)
    }

    /// Decodes and validates the string form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        self = try container.validating { () throws(ValidationError) in
            try SemanticVersion(parsing: text)
        }
    }

    /// Encodes the string form, build metadata included.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
