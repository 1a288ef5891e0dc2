internal import Foundation
internal import HTTPTypes
public import Hummingbird
internal import Logging
internal import Metrics
internal import Models
internal import NIOCore

/// The per-request context: Hummingbird's core storage plus the client's address and the
/// request id.
public struct StoreRequestContext: RequestContext {
    /// Hummingbird's storage (logger, parameters).
    public var coreContext: CoreRequestContextStorage
    /// The peer's IP address (the first `X-Forwarded-For` hop is not trusted).
    public let clientAddress: String
    /// The request id (`X-Request-ID`, echoed or generated).
    public var requestID: String = ""

    /// Creates the context for a connection.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        clientAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// Bodies are collected by the routes with their own limits.
    public var maxUploadSize: Int { 64 * 1024 }
}

/// Request ids, access logs, metrics, and every error as `application/problem+json`.
struct ServerMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let started = ContinuousClock.now
        let requestID = Self.requestID(from: request.headers[.requestID])
        context.requestID = requestID
        context.logger[metadataKey: "request_id"] = .string(requestID)
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            response = Reply.problem(error, requestID: requestID)
        } catch let error as any HTTPResponseError {
            response = Self.problem(for: error, request: request, requestID: requestID)
        } catch {
            context.logger.error(
                "request failed",
                metadata: ["error": "\(String(describing: error).prefix(500))"]
            )
            response = Reply.problem(
                APIError(
                    APIProblem(
                        type: ProblemType.internal,
                        title: "Internal error",
                        status: 500,
                        detail: "The server could not answer; the request id is in 'instance'."
                    )
                ),
                requestID: requestID
            )
        }
        response.headers[.requestID] = requestID
        let elapsed = ContinuousClock.now - started
        let millis =
            Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds)
            / 1e15
        let route = context.endpointPath ?? "unmatched"
        context.logger.info(
            "request",
            metadata: [
                "method": .string(request.method.rawValue), "path": .string(request.uri.path),
                "status": .stringConvertible(response.status.code),
                "ms": .string(String(format: "%.2f", millis)),
            ]
        )
        Metrics.Timer(
            label: "store_server_request_duration_seconds",
            dimensions: [("route", route), ("method", request.method.rawValue)],
            preferredDisplayUnit: .seconds
        ).recordNanoseconds(Int64(millis * 1_000_000))
        Counter(
            label: "store_server_responses_total",
            dimensions: [("route", route), ("status", String(response.status.code))]
        ).increment()
        return response
    }

    /// A client's id when it is 1–128 visible ASCII characters, else a new one.
    static func requestID(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128,
            header.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
        {
            return header
        }
        return UUID().uuidString.lowercased()
    }

    /// Hummingbird's own errors (no route, body too large) as problem documents.
    static func problem(for error: any HTTPResponseError, request: Request, requestID: String)
        -> Response
    {
        switch error.status.code {
        case 404:
            return Reply.problem(
                .notFound("no route \(request.method.rawValue) \(request.uri.path)"),
                requestID: requestID
            )
        case 413:
            return Reply.problem(.payloadTooLarge(limit: 64 * 1024), requestID: requestID)
        case 400..<500:
            return Reply.problem(
                APIError(
                    APIProblem(
                        type: ProblemType.badRequest,
                        title: "Bad request",
                        status: Int(error.status.code),
                        detail: "the request could not be read (\(error.status.reasonPhrase))"
                    )
                ),
                requestID: requestID
            )
        default:
            return Reply.problem(
                APIError(
                    APIProblem(
                        type: ProblemType.internal,
                        title: "Internal error",
                        status: 500,
                        detail: "The server could not answer; the request id is in 'instance'."
                    )
                ),
                requestID: requestID
            )
        }
    }
}
