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
final class HTTPEdgeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Requests passed on whose response has not ended yet.
    private var unanswered = 0
    private var closeAfterResponse = false
    private var rejected = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !rejected else { return }
        if case .head = unwrapInboundIn(data) { unanswered += 1 }
        context.fireChannelRead(data)
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
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
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
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
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
