internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Logging
internal import Models

/// Every failure as `application/problem+json`: the server's own ``APIError``s answer for
/// themselves (Hummingbird's `HTTPResponseError`), Hummingbird's errors (no route, body too
/// large, unreadable request) become the matching problem, a failure while the database cannot
/// be reached is a 503 `unavailable` with `Retry-After` (clients retry; never a 500 for an
/// outage), and anything else is a 500 whose `instance` holds the request id, logged with its
/// cause.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    let database: StoreDatabase

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            return Self.response(for: error, request: request, context: context)
        } catch {
            if await !database.isReachable() {
                context.logger.warning(
                    "database unreachable",
                    metadata: ["error": "\(String(describing: error).prefix(300))"]
                )
                return APIError.unavailable(
                    "the database cannot be reached; retry in a few seconds",
                    retryAfter: 2
                ).response(requestID: context.requestID)
            }
            return Self.response(for: error, request: request, context: context)
        }
    }

    /// The problem response for `error`.
    static func response(for error: any Error, request: Request, context: StoreRequestContext)
        -> Response
    {
        switch error {
        case let error as APIError:
            return error.response(requestID: context.requestID)
        case let error as any HTTPResponseError:
            return problem(for: error, request: request).response(requestID: context.requestID)
        default:
            context.logger.error(
                "request failed",
                metadata: ["error": "\(String(describing: error).prefix(500))"]
            )
            return APIError.internal.response(requestID: context.requestID)
        }
    }

    /// Hummingbird's own errors as the server's problems.
    static func problem(for error: any HTTPResponseError, request: Request) -> APIError {
        switch error.status.code {
        case 404:
            return .notFound("no route \(request.method.rawValue) \(request.uri.path)")
        case 413:
            return .payloadTooLarge(limit: BodyLimit.json)
        case 400..<500:
            return APIError(
                APIProblem(
                    type: ProblemType.badRequest,
                    title: "Bad request",
                    status: Int(error.status.code),
                    detail: "the request could not be read (\(error.status.reasonPhrase))"
                )
            )
        default:
            return .internal
        }
    }
}
