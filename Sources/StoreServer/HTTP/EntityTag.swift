internal import Auth
internal import Foundation
internal import Models

/// Entity tags: reservation versions (`"3"`), content hashes (images, client configuration)
/// and `If-None-Match` matching.
enum EntityTag {
    /// `"3"`, `W/"3"` or `3` → 3; nil for anything else.
    static func version(from text: String) -> Int? {
        var value = text.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("W/") { value.removeFirst(2) }
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
            value = String(value.dropFirst().dropLast())
        }
        guard let version = Int(value), ModelLimits.version.contains(version) else { return nil }
        return version
    }

    /// Whether an `If-None-Match` header matches `etag`.
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains {
            let candidate = $0.trimmingCharacters(in: .whitespaces)
            return candidate == "*" || candidate == etag || candidate == "W/" + etag
        }
    }

    /// The first 16 hex digits of the SHA-256 of `data`.
    static func shortHash(_ data: Data) -> String {
        let digest = RequestSigner.contentDigest(of: data)  // sha-256=:<base64>:
        let base64 = digest.dropFirst("sha-256=:".count).dropLast()
        let bytes = Data(base64Encoded: String(base64)) ?? Data()
        return bytes.prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
