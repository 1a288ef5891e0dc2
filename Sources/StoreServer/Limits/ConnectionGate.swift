internal import Foundation
internal import Logging
internal import Models
internal import NIOCore
internal import NIOHTTPTypes
internal import NIOSSL

/// The keys a connection is counted under in the connection ``LoadLimiter``: its client
/// address, or none for a trusted proxy (a load balancer carries many clients, so it counts in
/// the total only). The one place that decides how a connection is keyed.
enum ConnectionKeys {
    /// The keys for a connection from `peer`.
    static func keys(peer: String?, proxies: TrustedProxies) -> [String: String] {
        guard let peer else { return ["address": "unknown"] }
        return proxies.trusts(peer) ? [:] : ["address": peer]
    }
}

/// The connection's guard, first of the handlers after the HTTP codec: it takes a permit from
/// the connection ``LoadLimiter`` when the connection opens (per client address and in all)
/// and gives it back when the connection closes. A connection over a cap is answered
/// `503 Service Unavailable` with `Retry-After` and `Connection: close` at once, before any of
/// its bytes are read, and closed: a flood of connections from one address is refused rather
/// than left to hang, and costs the others nothing but those answers.
///
/// It also bounds how long one request may take to arrive: from its head to the end of its
/// body at most `bodyTimeout`, however slowly it trickles in (the idle timeout alone is reset by
/// every chunk). A request's head is bounded by the idle timeout, as no part is read before the
/// head is complete.
final class ConnectionGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limiter: LoadLimiter
    private let proxies: TrustedProxies
    private let bodyTimeout: TimeAmount
    private let logger: Logger
    private var permit: LoadLimiter.Permit?
    private var admitted = false
    private var bodyDeadline: Scheduled<Void>?

    init(limiter: LoadLimiter, proxies: TrustedProxies, bodyTimeout: Duration, logger: Logger) {
        self.limiter = limiter
        self.proxies = proxies
        self.bodyTimeout = TimeAmount(bodyTimeout)
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard permit != nil else { return }
        switch unwrapInboundIn(data) {
        case .head:
            bodyDeadline?.cancel()
            bodyDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: bodyTimeout) {
                [logger] in
                logger.notice("request not received within the body timeout: connection closed")
                context.close(promise: nil)
            }
        case .body:
            break
        case .end:
            bodyDeadline?.cancel()
            bodyDeadline = nil
        }
        context.fireChannelRead(data)
    }

    private func admit(context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        let peer = context.channel.remoteAddress?.ipAddress
        do {
            permit = try limiter.permit(for: ConnectionKeys.keys(peer: peer, proxies: proxies))
        } catch {
            logger.debug(
                "connection refused: \(error)",
                metadata: ["address": .string(peer ?? "unknown")]
            )
            refuse(context: context, refusal: error)
        }
    }

    /// Answers 503 on the raw connection (no request was read, so the HTTP codec has nothing
    /// to answer) and closes it. On a TLS connection the answer goes right behind the TLS
    /// handler, so it is sent encrypted once the handshake is done.
    private func refuse(context: ChannelHandlerContext, refusal: LoadLimiter.Refusal) {
        let detail =
            refusal.isOverloaded
            ? "the server is at its limit of connections"
            : "too many connections at once from this client address"
        let problem = APIProblem(
            type: ProblemType.unavailable,
            title: "Service unavailable",
            status: 503,
            detail: "\(detail); retry in \(refusal.retryAfter) s"
        )
        let body = (try? JSONEncoder.shopfloor.encode(problem)) ?? Data()
        let head =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: \(APIProblem.mediaType)\r\n"
            + "Content-Length: \(body.count)\r\nRetry-After: \(refusal.retryAfter)\r\n"
            + "Connection: close\r\n\r\n"
        var bytes = ByteBuffer(string: head)
        bytes.writeBytes(body)
        let writer = RawRefusal(answer: bytes)
        let position: ChannelPipeline.SynchronousOperations.Position
        if let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self) {
            position = .after(tls)
        } else {
            position = .first
        }
        _ = try? context.pipeline.syncOperations.addHandler(writer, position: position)
    }

    private func finish() {
        bodyDeadline?.cancel()
        bodyDeadline = nil
        permit?.release()
        permit = nil
    }
}

/// Put first in the pipeline of a refused connection (behind the TLS handler on a TLS
/// connection): writes the refusal's bytes straight to the connection, reads nothing of the
/// client's, and closes once they are written.
private final class RawRefusal: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let answer: ByteBuffer
    private var sent = false

    init(answer: ByteBuffer) { self.answer = answer }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promise?.succeed()
    }

    private func send(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(answer), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
