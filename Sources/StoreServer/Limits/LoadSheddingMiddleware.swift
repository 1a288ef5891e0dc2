internal import Hummingbird

/// Load shedding: every request but the health and metrics checks holds a permit of the
/// server's requests-in-flight ``LoadLimiter`` while it is handled. Over the cap the server
/// answers `503 Service Unavailable` with `Retry-After` at once, before it reads the body or
/// touches the database, instead of queueing work for the database pool until every answer is
/// late: the requests it takes keep their latency, the refused ones retry. `/health` and
/// `/metrics` are never shed, so a load balancer and monitoring still see a live server.
struct LoadSheddingMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    /// The limiter whose ``LoadLimiter/Limits/total`` is the cap of requests in flight.
    let limiter: LoadLimiter

    /// Paths never shed.
    static let exempt: Set<String> = ["/health", "/metrics"]

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        if Self.exempt.contains(request.uri.path) { return try await next(request, context) }
        let permit: LoadLimiter.Permit
        do {
            permit = try limiter.permit(for: [:])
        } catch {
            // Not logged one by one (the access log has each 503): shedding is for when the
            // server has no time to spare.
            throw APIError.refused(error)
        }
        defer { permit.release() }
        return try await next(request, context)
    }
}
