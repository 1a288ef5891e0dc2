internal import HTTPTypes
internal import Hummingbird
internal import Synchronization

/// A route the server registers (method and OpenAPI-style path), for the OpenAPI check.
public struct RegisteredRoute: Sendable, Hashable, CustomStringConvertible {
    /// `GET`, `POST`, …
    public var method: String
    /// `/v1/reservations/{id}`.
    public var path: String
    /// True for the routes anyone may call (no signed request).
    public var isPublic: Bool
    /// `GET /v1/reservations/{id}`.
    public var description: String { "\(method) \(path)" }
}

/// The routes as they are added, in order.
final class RouteLog: Sendable {
    private let routes = Mutex<[RegisteredRoute]>([])

    var all: [RegisteredRoute] { routes.withLock { $0 } }

    func append(_ route: RegisteredRoute) { routes.withLock { $0.append(route) } }
}

/// A router front that notes every route added through it (and the groups made from it) in a
/// ``RouteLog``, so the running server can say which routes it serves and which are public.
/// Middleware belongs on groups made from it, never on the front itself.
struct RouteRecorder: RouterMethods {
    typealias Context = StoreRequestContext

    let router: Router<StoreRequestContext>
    let log: RouteLog
    let isPublic: Bool

    @discardableResult
    func on<Responder: HTTPResponder>(
        _ path: RouterPath,
        method: HTTPRequest.Method,
        responder: Responder
    ) -> RouteRecorder where Responder.Context == StoreRequestContext {
        log.append(
            RegisteredRoute(method: method.rawValue, path: path.description, isPublic: isPublic)
        )
        router.on(path, method: method, responder: responder)
        return self
    }

    @discardableResult
    func add(middleware: any MiddlewareProtocol<Request, Response, StoreRequestContext>)
        -> RouteRecorder
    {
        router.add(middleware: middleware)
        return self
    }
}

/// The route groups a controller adds its routes to: public, or behind the signature check
/// (with a JSON or a form body limit), or signed and idempotent (`Idempotency-Key`).
struct RouteGroups {
    /// Routes anyone may call.
    let open: RouterGroup<StoreRequestContext>
    /// Signed routes with JSON bodies (64 KiB).
    let signed: RouterGroup<StoreRequestContext>
    /// Signed routes with form bodies (4 KiB).
    let signedForm: RouterGroup<StoreRequestContext>
    /// Signed writes that honour `Idempotency-Key`.
    let idempotent: RouterGroup<StoreRequestContext>

    init(
        router: Router<StoreRequestContext>,
        log: RouteLog,
        gate: AuthGate,
        users: UserRepository,
        idempotency: IdempotencyMiddleware
    ) {
        let open = RouteRecorder(router: router, log: log, isPublic: true)
        let signed = RouteRecorder(router: router, log: log, isPublic: false)
        self.open = open.group()
        self.signed = signed.group().add(middleware: SignatureMiddleware(gate: gate, users: users))
        signedForm = signed.group().add(
            middleware: SignatureMiddleware(gate: gate, users: users, bodyLimit: BodyLimit.form)
        )
        idempotent = signed.group()
            .add(middleware: SignatureMiddleware(gate: gate, users: users))
            .add(middleware: idempotency)
    }
}
