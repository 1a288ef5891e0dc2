internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Logging
internal import Metrics

/// The outermost middleware: gives every request an id (`X-Request-ID`, echoed when the client
/// sent a usable one), logs one line per answer and counts it in the process's metrics (the
/// executable chooses the metrics backend; without one the counts go nowhere).
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    /// The proxies whose forwarded client address and scheme are believed.
    var proxies = TrustedProxies()
    /// The scheme of the server's own connections: `https` when it serves TLS itself.
    var directScheme = "http"

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let started = ContinuousClock.now
        let requestID = Self.requestID(from: request.headers[.requestID])
        context.requestID = requestID
        // One id per line: Hummingbird's own request id is replaced by this one (the one the
        // client sees in `X-Request-ID`), rather than logged beside it.
        context.logger[metadataKey: "hb.request.id"] = .string(requestID)
        context.clientAddress = proxies.clientAddress(
            peer: context.peerAddress,
            forwardedFor: request.headers[values: .forwardedFor]
        )
        context.scheme = proxies.scheme(
            peer: context.peerAddress,
            forwardedProto: request.headers[.forwardedProto],
            direct: directScheme
        )
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            // ProblemMiddleware answers everything below it; this is what escapes it.
            response = APIError.internal.response(requestID: requestID)
        }
        response.headers[.requestID] = requestID
        let elapsed = ContinuousClock.now - started
        let nanoseconds =
            elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds
            / 1_000_000_000
        let route = context.endpointPath ?? "unmatched"
        context.logger.info(
            "request",
            metadata: [
                "method": .string(request.method.rawValue), "path": .string(request.uri.path),
                "status": .stringConvertible(response.status.code),
                "ms": .string(String(format: "%.2f", Double(nanoseconds) / 1e6)),
            ]
        )
        Metrics.Timer(
            label: "store_server_request_duration_seconds",
            dimensions: [("route", route), ("method", request.method.rawValue)],
            preferredDisplayUnit: .seconds
        ).recordNanoseconds(nanoseconds)
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
}
