public import Foundation

/// An RFC 9457 problem document (`application/problem+json`).
public struct ProblemDetails: Codable, Sendable, Equatable {
    /// A stable URI naming the kind of problem.
    public var type: String
    /// A short human summary of the kind.
    public var title: String
    /// The HTTP status.
    public var status: Int
    /// A human explanation for this occurrence (never a secret).
    public var detail: String?

    /// Creates a problem document.
    public init(type: String, title: String, status: Int, detail: String? = nil) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
    }

    /// The media type to send it with.
    public static let mediaType = "application/problem+json"

    /// The JSON body (sorted keys, so it is stable).
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self))
            ?? Data("{\"type\":\"\(type)\",\"status\":\(status)}".utf8)
    }
}

/// The stable `type` URIs of Auth's problems.
public enum AuthProblemType {
    /// Base of every Auth problem type.
    public static let base = "https://shopfloor.dev/problems/auth/"
    /// The access token is missing, unknown, expired or revoked: refresh and retry.
    public static let invalidToken = base + "invalid-token"
    /// The request signature is missing, malformed, wrong or replayed.
    public static let invalidSignature = base + "invalid-signature"
    /// The signature's `created` is outside the server's window: correct the clock from
    /// the response's `Date` header and retry.
    public static let signatureOutsideWindow = base + "signature-outside-window"
    /// The user name or password is wrong (token endpoint).
    public static let invalidCredentials = base + "invalid-credentials"
    /// The refresh token is unknown, used, expired or revoked (token endpoint).
    public static let invalidGrant = base + "invalid-grant"
    /// The token request itself is malformed (token endpoint).
    public static let invalidRequest = base + "invalid-request"
    /// The server's session or nonce store did not answer (status 503): retry later; this is
    /// never a verdict on the credentials.
    public static let unavailable = base + "unavailable"
}
