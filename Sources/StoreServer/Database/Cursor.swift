internal import Foundation

/// The opaque `nextCursor` of a list: the sort key of the last item sent, versioned, in
/// base64url. Clients only pass it back; a cursor that does not decode is a 400.
struct PageCursor: Equatable {
    var values: [String]

    init(_ values: [String]) { self.values = values }

    /// `v1` + the values joined by U+001F, base64url without padding.
    var encoded: String {
        let text = (["v1"] + values).joined(separator: "\u{1F}")
        return Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes a cursor with exactly `count` values; nil when it is not one of ours.
    init?(decoding text: String, count: Int) {
        guard !text.isEmpty, text.utf8.count <= 1024,
            text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
            )
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(
            of: "_",
            with: "/"
        )
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let decoded = String(data: data, encoding: .utf8)
        else { return nil }
        let parts = decoded.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(
            String.init
        )
        guard parts.count == count + 1, parts[0] == "v1",
            parts.allSatisfy({ StorableText.problem(in: $0, controls: true) == nil })
        else { return nil }
        values = Array(parts.dropFirst())
    }
}

/// `limit` and `cursor` of a list request, checked.
struct PageRequest {
    static let defaultLimit = 50
    static let maxLimit = 200

    var limit: Int
    var cursor: PageCursor?

    /// Reads `?limit=` (1…200, default 50) and `?cursor=`; throws a 400 naming the parameter.
    init(limit: String?, cursor: String?, cursorValues: Int) throws(APIError) {
        if let limit {
            guard let value = Int(limit), (1...Self.maxLimit).contains(value) else {
                throw APIError.badRequest(
                    "query parameter 'limit' must be an integer from 1 to \(Self.maxLimit), got '\(limit.prefix(20))'"
                )
            }
            self.limit = value
        } else {
            self.limit = Self.defaultLimit
        }
        if let cursor {
            guard let decoded = PageCursor(decoding: cursor, count: cursorValues) else {
                throw APIError.badRequest(
                    "query parameter 'cursor' is not a cursor this server issued; pass a previous page's nextCursor"
                )
            }
            self.cursor = decoded
        } else {
            self.cursor = nil
        }
    }
}
