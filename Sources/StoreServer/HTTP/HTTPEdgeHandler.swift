internal import Foundation
internal import HTTPTypes
internal import Models
internal import NIOCore
internal import NIOHTTP1
internal import NIOHTTPTypes

/// The connection's edge, between the HTTP/1.1 codec and Hummingbird: a request the parser
/// rejects gets a `bad-request` problem document (not a bare 400) and the connection is
/// closed; a response that says `Connection: close` (a 413 whose body was not read) really
/// closes the connection once it is written.
///
/// Such a close is made in stages (RFC 9112 § 9.6): the answer, then a half-close (FIN), then
/// what the client still sends is read and dropped until it closes too, or for ``linger`` at
/// most. Closed at once, the unread bytes of a body the 413 refused made the kernel reset the
/// connection, and a client still writing that body (libcurl between two 64 KiB writes) failed
/// with "Send failure: Connection reset by peer" before it read the answer.
final class HTTPEdgeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How long a half-closed connection reads and drops what its client still sends.
    static let linger = TimeAmount.seconds(2)

    /// Requests passed on whose response has not ended yet.
    private var unanswered = 0
    private var closeAfterResponse = false
    private var rejected = false
    /// Set once the last answer (`Connection: close`) is on its way: from then on reads are
    /// dropped and a close waits for the linger's end.
    private var lingering = false
    private var lingerEnd: Scheduled<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !rejected, !lingering else { return }
        if case .head = unwrapInboundIn(data) { unanswered += 1 }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard !lingering else {
            context.read()
            return
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if lingering, let event = event as? ChannelEvent, event == .inputClosed {
            endLinger(context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        lingerEnd?.cancel()
        lingerEnd = nil
        context.fireChannelInactive()
    }

    /// A close from Hummingbird (its answer said `Connection: close`) once the last answer is
    /// on its way ends with the linger.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if lingering, mode == .all {
            if let promise { context.channel.closeFuture.cascade(to: promise) }
            return
        }
        context.close(mode: mode, promise: promise)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.headerFields[.connection]?.lowercased() == "close" { closeAfterResponse = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            unanswered = max(0, unanswered - 1)
            guard closeAfterResponse else {
                context.write(data, promise: promise)
                return
            }
            closeAfterResponse = false
            closeInStages(context: context, after: data, promise: promise)
        }
    }

    /// Writes the last answer's `end`, then half-closes and drops reads until the client
    /// closes too or ``linger`` passes (on TLS the half-close is NIOSSL's close_notify). Where
    /// the connection cannot half-close, or the answer could not be written, it closes at once.
    private func closeInStages(
        context: ChannelHandlerContext,
        after end: NIOAny,
        promise: EventLoopPromise<Void>?
    ) {
        lingering = true
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.cascade(to: promise)
        context.writeAndFlush(end, promise: written)
        written.futureResult.assumeIsolated().whenComplete { result in
            guard case .success = result else {
                self.endLinger(context: context)
                return
            }
            self.halfClose(context: context)
        }
    }

    private func halfClose(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let halfClosed = context.eventLoop.makePromise(of: Void.self)
        context.close(mode: .output, promise: halfClosed)
        halfClosed.futureResult.assumeIsolated().whenComplete { result in
            guard case .success = result, context.channel.isActive else {
                self.endLinger(context: context)
                return
            }
            self.lingerEnd = context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) {
                self.endLinger(context: context)
            }
            context.read()
        }
    }

    private func endLinger(context: ChannelHandlerContext) {
        lingerEnd?.cancel()
        lingerEnd = nil
        lingering = false
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // What a lingering connection still receives is dropped, errors and all.
        if lingering { return }
        guard let parserError = error as? HTTPParserError, unanswered == 0, !rejected else {
            context.fireErrorCaught(error)
            return
        }
        rejected = true
        let problem = APIProblem(
            type: ProblemType.badRequest,
            title: "Bad request",
            status: 400,
            detail: "the request is not valid HTTP/1.1 (\(Self.describe(parserError)))"
        )
        let body = (try? JSONEncoder.shopfloor.encode(problem)) ?? Data()
        var fields = HTTPFields()
        fields[.contentType] = APIProblem.mediaType
        fields[.contentLength] = String(body.count)
        fields[.connection] = "close"
        fields[HTTPField.Name("X-Request-ID")!] = UUID().uuidString.lowercased()
        context.write(
            wrapOutboundOut(.head(HTTPResponse(status: .badRequest, headerFields: fields))),
            promise: nil
        )
        context.write(wrapOutboundOut(.body(ByteBuffer(data: body))), promise: nil)
        closeInStages(context: context, after: wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// The parser's complaint in words (no request bytes).
    static func describe(_ error: HTTPParserError) -> String {
        switch error {
        case .headerOverflow: "headers too large"
        case .invalidMethod: "unknown method"
        case .invalidURL: "invalid target"
        case .invalidVersion: "unknown HTTP version"
        case .invalidHeaderToken: "invalid header"
        case .invalidContentLength, .unexpectedContentLength: "invalid Content-Length"
        case .invalidChunkSize: "invalid chunk size"
        default: "unreadable request"
        }
    }
}
