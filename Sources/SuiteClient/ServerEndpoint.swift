public import Foundation

/// The store-server a client app talks to, and where that choice came from.
///
/// Precedence (`../shared/CONVENTIONS.md`): `--server` > `SHOPFLOOR_SERVER` > the URL stored
/// at sign-in > `http://127.0.0.1:8080`.
public struct ServerEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Where the URL came from.
    public enum Source: String, Sendable, Hashable {
        /// The `--server` option.
        case option
        /// The `SHOPFLOOR_SERVER` environment variable.
        case environment
        /// The URL stored in the suite's shared settings at sign-in.
        case stored
        /// The built-in default, `http://127.0.0.1:8080`.
        case builtIn
    }

    /// The default server: a store-server on this machine.
    public static let defaultURL = URL(string: "http://127.0.0.1:8080")!

    /// The base URL: scheme, host, optional port, no path, query or fragment.
    public let url: URL
    /// Where it came from.
    public let source: Source

    /// Checks and normalizes `text` as a server base URL.
    ///
    /// - Throws: ``SuiteClientError`` `invalidInput` naming `origin` (such as `--server`) when
    ///   the text is not an `http` or `https` URL with a host, or has a path, query,
    ///   fragment or user info.
    public init(parsing text: String, source: Source, origin: String) throws(SuiteClientError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        func refuse(_ why: String) -> SuiteClientError {
            SuiteClientError(.invalidInput, "\(origin) '\(trimmed.prefix(200))' \(why)")
        }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme
        else {
            throw refuse("is not a URL (use http://HOST:PORT or https://HOST)")
        }
        guard scheme.lowercased() == "http" || scheme.lowercased() == "https" else {
            throw refuse("is not an http or https URL")
        }
        guard let host = components.host, !host.isEmpty else { throw refuse("has no host") }
        guard components.user == nil, components.password == nil else {
            throw refuse("must not hold a user name or password")
        }
        guard components.query == nil, components.fragment == nil,
            components.path.isEmpty || components.path == "/"
        else {
            throw refuse("must be a server address without a path, query or fragment")
        }
        if let port = components.port, !(1...65_535).contains(port) {
            throw refuse("has a port outside 1…65535")
        }
        var normalized = URLComponents()
        normalized.scheme = scheme.lowercased()
        normalized.host = host.lowercased()
        normalized.port = components.port
        guard let url = normalized.url else { throw refuse("is not a usable URL") }
        self.url = url
        self.source = source
    }

    /// Resolves the server by the suite's precedence.
    /// - Parameters:
    ///   - option: the `--server` value, if given.
    ///   - environment: the process environment (`SHOPFLOOR_SERVER`).
    ///   - stored: the URL stored at sign-in, if any.
    /// - Throws: ``SuiteClientError`` `invalidInput` for a malformed option or variable.
    ///   A malformed stored URL is skipped (it falls to the default) rather than blocking
    ///   every command; signing in again replaces it.
    public static func resolve(
        option: String?,
        environment: [String: String],
        stored: String?
    ) throws(SuiteClientError) -> ServerEndpoint {
        if let option {
            return try ServerEndpoint(parsing: option, source: .option, origin: "--server")
        }
        if let variable = environment["SHOPFLOOR_SERVER"], !variable.isEmpty {
            return try ServerEndpoint(
                parsing: variable,
                source: .environment,
                origin: "SHOPFLOOR_SERVER"
            )
        }
        if let stored, !stored.isEmpty,
            let endpoint = try? ServerEndpoint(
                parsing: stored,
                source: .stored,
                origin: "the stored server URL"
            )
        {
            return endpoint
        }
        return ServerEndpoint(url: defaultURL, source: .builtIn)
    }

    init(url: URL, source: Source) {
        self.url = url
        self.source = source
    }

    /// The host name or address, without IPv6 brackets.
    public var host: String {
        var host = url.host ?? "127.0.0.1"
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host
    }

    /// The port, explicit or the scheme's default.
    public var port: Int { url.port ?? (url.scheme == "https" ? 443 : 80) }

    /// `scheme://host:port`, the key the offline cache is kept under.
    public var origin: String { "\(url.scheme ?? "http")://\(host):\(port)" }

    /// The URL as text.
    public var description: String { url.absoluteString }
}
