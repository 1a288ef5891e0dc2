internal import Foundation
internal import Hummingbird

/// Refuses, before any route runs, a query parameter holding text the database cannot store or
/// search for: NUL, any other control character, or percent-escapes that are not UTF-8. The
/// 400 names the parameter.
struct QueryTextMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        if let query = request.uri.query {
            for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(
                    separator: "=",
                    maxSplits: 1,
                    omittingEmptySubsequences: false
                )
                let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                let label = Self.printable(name)
                guard let value = parts.count > 1 ? Self.decode(parts[1]) : "" else {
                    throw APIError.badRequest(
                        "query parameter '\(label)' is not percent-encoded UTF-8 text"
                    )
                }
                if let problem = StorableText.problem(in: name, controls: true)
                    ?? StorableText.problem(in: value, controls: true)
                {
                    throw APIError.badRequest("query parameter '\(label)' \(problem)")
                }
            }
        }
        return try await next(request, context)
    }

    /// A form-style query value: `+` is a space, percent-escapes must be UTF-8.
    static func decode(_ value: Substring) -> String? {
        let text = value.replacingOccurrences(of: "+", with: " ")
        guard text.contains("%") else { return text }
        return text.removingPercentEncoding
    }

    /// A parameter name as a problem may quote it: control characters as `\u{…}`.
    static func printable(_ name: String) -> String {
        String(
            name.prefix(40).unicodeScalars.map {
                $0.value < 0x20 || $0.value == 0x7F
                    ? "\\u{\(String($0.value, radix: 16))}" : String($0)
            }.joined()
        )
    }
}
