internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Logging

/// The gate of every signed route: collects the body (413 over `bodyLimit`), checks the bearer
/// token and the request signature over method, target and body (401 otherwise), reads the
/// caller's role and stores from the database (so a change takes effect at the next request),
/// and hands the caller on in ``StoreRequestContext/signedIn``. Routes behind it read the
/// collected body.
struct SignatureMiddleware: RouterMiddleware {
    typealias Context = StoreRequestContext

    let gate: AuthGate
    let users: UserRepository
    var bodyLimit: Int = BodyLimit.json

    func handle(
        _ request: Request,
        context: StoreRequestContext,
        next: (Request, StoreRequestContext) async throws -> Response
    ) async throws -> Response {
        var request = request
        let body = try await request.collect(limit: bodyLimit)
        let signedIn: SignedIn
        if let known = try await gate.signedInWithCachedKey(
            request,
            body: body,
            scheme: context.scheme
        ) {
            // The token's key was known: one statement for the nonce, token and access.
            signedIn = known
        } else {
            signedIn = try await firstSignedIn(request, body: body, scheme: context.scheme)
        }
        var context = context
        context.signedIn = signedIn
        context.logger[metadataKey: "subject"] = .string(signedIn.subject)
        context.logger[metadataKey: "keyid"] = .string(signedIn.keyID)
        return try await next(request, context)
    }

    /// The caller of a request whose token's key is not cached: the token, its session and
    /// the user's role and stores in one statement (``AccessPrefetch``; used only if the
    /// signature holds), then the signature and its nonce.
    private func firstSignedIn(_ request: Request, body: [UInt8], scheme: String) async throws
        -> SignedIn
    {
        let (session, prefetched) = try await AccessPrefetch.withPrefetch {
            try await gate.session(of: request)
        }
        var signedIn = try await gate.verify(request, body: body, scheme: scheme, session: session)
        if let prefetched, prefetched.subject == session.subject {
            signedIn.access = prefetched.access
        } else {
            signedIn.access = try await users.access(session.subject)
        }
        gate.remember(session, of: request)
        return signedIn
    }
}
