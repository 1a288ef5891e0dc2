internal import Foundation

// Every type that holds a secret (password, token, signing key) prints, debug-prints and
// dumps without it: `description`, `debugDescription` and a `Mirror` (for `dump`, debuggers
// and reflection-based loggers) name only what is safe (key ids, expiry, server, user).

/// The text that stands in for a secret.
let redacted = "<redacted>"

extension SigningKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `SigningKey(id: …, secret: <redacted>)`.
    public var description: String { "SigningKey(id: \(id), secret: \(redacted))" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// The id only.
    public var customMirror: Mirror {
        Mirror(self, children: ["id": id, "secret": redacted], displayStyle: .struct)
    }
}

extension RequestSigner: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `RequestSigner(key: SigningKey(id: …, secret: <redacted>))`.
    public var description: String { "RequestSigner(key: \(key))" }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// The key's id only (the prepared HMAC state holds key material).
    public var customMirror: Mirror {
        Mirror(self, children: ["key": key], displayStyle: .struct)
    }
}

extension StoredCredentials: CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Key id, expiry, server and user; tokens and key redacted.
    public var description: String {
        "StoredCredentials(keyid: \(signingKeyID), expiresAt: \(expiresAt), server: \(serverURL), user: \(username ?? "-"), tokens: \(redacted), signingKey: \(redacted))"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// Only the non-secret fields.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessToken": redacted, "refreshToken": redacted, "expiresAt": expiresAt,
                "signingKeyID": signingKeyID, "signingKey": redacted, "serverURL": serverURL,
                "username": username as Any, "lifetime": lifetime as Any,
            ],
            displayStyle: .struct
        )
    }
}

extension TokenResponse: CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Lifetime, type and key id; tokens and key redacted.
    public var description: String {
        "TokenResponse(tokenType: \(tokenType), expiresIn: \(expiresIn), signingKeyID: \(signingKeyID), tokens: \(redacted), signingKey: \(redacted))"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// Only the non-secret fields.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessToken": redacted, "refreshToken": redacted, "expiresIn": expiresIn,
                "tokenType": tokenType, "signingKeyID": signingKeyID, "signingKey": redacted,
            ],
            displayStyle: .struct
        )
    }
}

extension TokenGrant: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The grant type and user name; password and refresh token redacted.
    public var description: String {
        switch self {
        case .password(let username, _):
            return "TokenGrant.password(username: \(username), password: \(redacted))"
        case .refreshToken: return "TokenGrant.refreshToken(\(redacted))"
        }
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// The grant type and user name only.
    public var customMirror: Mirror {
        switch self {
        case .password(let username, _):
            return Mirror(
                self,
                children: ["username": username, "password": redacted],
                displayStyle: .enum
            )
        case .refreshToken:
            return Mirror(self, children: ["refreshToken": redacted], displayStyle: .enum)
        }
    }
}

extension AuthSession: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Session id, subject, key id and expiry; no secret.
    public var description: String {
        "AuthSession(id: \(id), subject: \(subject), signingKey: \(signingKey), accessTokenExpiresAt: \(accessTokenExpiresAt))"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
    /// The fields, with the key redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "subject": subject, "signingKey": signingKey,
                "accessTokenExpiresAt": accessTokenExpiresAt,
            ],
            displayStyle: .struct
        )
    }
}

extension ActiveCredentials: CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    var description: String { "ActiveCredentials(\(credentials))" }
    var debugDescription: String { description }
    var customMirror: Mirror {
        Mirror(self, children: ["credentials": credentials], displayStyle: .struct)
    }
}
