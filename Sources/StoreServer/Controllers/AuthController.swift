internal import Auth
internal import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import Models

/// Sign-in and sessions: `POST /v1/auth/token` (public, OAuth 2.0 style form), `POST
/// /v1/auth/revoke` (signed, RFC 7009 style form) and `GET /v1/me`.
struct AuthController {
    let service: SignInService

    func addRoutes(to routes: RouteGroups) {
        routes.open.post("/v1/auth/token", use: token)
        routes.signedForm.post("/v1/auth/revoke", use: revoke)
        routes.signed.get("/v1/me", use: me)
    }

    @Sendable func token(_ request: Request, context: StoreRequestContext) async throws -> Response
    {
        var request = request
        let body = try await request.collect(limit: BodyLimit.form)
        // A body that is not a form, or a form that is not a grant: the same 400.
        func bad(_ detail: String?) -> APIError {
            .auth(
                ProblemDetails(
                    type: AuthProblemType.invalidRequest,
                    title: "Bad token request",
                    status: 400,
                    detail: detail
                )
            )
        }
        do {
            _ = try Parse.formFields(body)
        } catch {
            throw bad(error.problem.detail)
        }
        let grant: TokenGrant
        do {
            grant = try TokenGrant.parse(formBody: body)
        } catch {
            throw bad(error.message)
        }
        let tokens: TokenResponse
        switch grant {
        case .password(let username, let password):
            tokens = try await service.signIn(
                username: username,
                password: password,
                address: context.clientAddress
            )
        case .refreshToken(let token):
            tokens = try await service.refresh(token)
        }
        return Reply.bytes(
            tokens.jsonData(),
            contentType: Reply.jsonType,
            headers: [(.cacheControl, "no-store")]
        )
    }

    @Sendable func revoke(_ request: Request, context: StoreRequestContext) async throws -> Response
    {
        var request = request
        let fields = try Parse.formFields(try await request.collect(limit: BodyLimit.form))
        guard let token = fields["token"], !token.isEmpty else {
            throw APIError.auth(
                ProblemDetails(
                    type: AuthProblemType.invalidRequest,
                    title: "Bad revocation request",
                    status: 400,
                    detail: "form field 'token' is missing"
                )
            )
        }
        try await service.revoke(token, by: try context.caller())
        return try Reply.json([String: String]())
    }

    @Sendable func me(_ request: Request, context: StoreRequestContext) async throws -> Response {
        try Reply.json(try await service.associate(try context.caller()))
    }
}
