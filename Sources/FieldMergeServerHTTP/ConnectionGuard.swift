import FieldMergeProtocol
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Guards one HTTP/1.1 connection, between Hummingbird's HTTP codec and its request
/// handling (Specs/http.md §3):
///
/// - closes it when the client is too slow to send a request or stays idle too long
///   (``ConnectionClock``), answering 408 `requestTimeout` when part of a request arrived;
/// - answers a request NIO cannot parse (a head over the size limits, too many headers,
///   conflicting `Content-Length`, a bad chunk) 400 `invalidHTTP` with the JSON error body,
///   where Hummingbird would answer an empty 400;
/// - keeps the ``ConnectionRegistry`` told whether the connection waits for a request.
///
/// Once it answered the connection itself, it drops what the client sends and the app
/// writes after that.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var clock: ConnectionClock
    private let registry: ConnectionRegistry
    private let logger: Logger
    private var timer: Scheduled<Void>?
    /// Closes the connection when it stays unwritable for the write timeout.
    private var stall: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private var reported: NIODeadline?
    private var answered = false
    /// A parse error's message while a response was being written: answered once it ends.
    private var deferredRefusal: String?

    init(timeouts: ConnectionClock.Timeouts, registry: ConnectionRegistry, logger: Logger) {
        clock = ConnectionClock(timeouts: timeouts, now: .now())
        self.registry = registry
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        reported = clock.waitingFor
        changed(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
        cancelStall()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        cancelStall()
        context.fireChannelInactive()
    }

    /// A connection that takes no more bytes (the client does not read what the server
    /// writes) is closed once that lasted the write timeout; writes then fail, so a live
    /// stream ends instead of waiting forever.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            cancelStall()
        } else if stall == nil {
            let logger = logger
            stall = context.eventLoop.assumeIsolated().scheduleTask(in: clock.timeouts.write) {
                logger.notice("connection closed: the client read nothing of the response within the write timeout")
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    private func cancelStall() {
        stall?.cancel()
        stall = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is BytesArrived else { return context.fireUserInboundEventTriggered(event) }
        clock.bytesArrived(now: .now())
        changed(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Once answered (408, 400), what still arrives is dropped: a request completed
        // after its 408 never reaches the routes.
        guard !answered else { return }
        switch unwrapInboundIn(data) {
        case .head: clock.requestHead(now: .now())
        case .body: break
        case .end: clock.requestEnded()
        }
        changed(context)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !answered else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(let response) where response.status.kind != .informational: clock.responseHead()
        case .head, .body: break
        case .end: clock.responseEnded(now: .now())
        }
        changed(context)
        context.write(data, promise: promise)
        if let message = deferredRefusal, !clock.responding {
            refuse(context, .badRequest, "invalidHTTP", message)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let parseError = error is HTTPParserError || error is HTTP1TypeConversionError || error is ByteToMessageDecoderError
        if parseError, !answered, deferredRefusal == nil, context.channel.isActive {
            let message = "the request is not valid HTTP/1.1 (\(error))"
            if clock.responding { deferredRefusal = message } else { refuse(context, .badRequest, "invalidHTTP", message) }
        }
        // A body being read must fail, not look complete: then the error goes on (and
        // Hummingbird closes the connection). Otherwise the guard's answer is the answer,
        // and Hummingbird, which would answer an empty 400 and close the connection at
        // once (a reset that can lose the answer), does not see the error.
        if !parseError || clock.receivingBody { context.fireErrorCaught(error) }
    }

    /// After each event: tells the registry, and makes sure a timer runs no later than the
    /// deadline (a later timer finds the deadline moved and sets itself again).
    private func changed(_ context: ChannelHandlerContext) {
        let waitingFor = clock.waitingFor
        if waitingFor != reported {
            reported = waitingFor
            registry.update(context.channel, waitingFor: waitingFor)
        }
        guard !answered, let deadline = clock.deadline?.at else { return }
        if let scheduled = timerDeadline, scheduled <= deadline { return }
        cancelTimer()
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { self.expire(context) }
    }

    private func expire(_ context: ChannelHandlerContext) {
        timer = nil
        timerDeadline = nil
        guard !answered, let (deadline, expiry) = clock.deadline else { return }
        guard deadline <= .now() else { return changed(context) }
        switch expiry {
        case .idle:
            logger.debug("connection closed: no request within the timeout")
            context.close(promise: nil)
        case .request:
            refuse(context, .requestTimeout, "requestTimeout", "the request did not arrive in time: a pause between its bytes over the read timeout, or longer in all than the request timeout")
            // A body being read fails now rather than when the connection closes.
            if clock.receivingBody { context.fireErrorCaught(RequestTimedOut()) }
        }
    }

    /// Answers `status` with the JSON error body, then closes the connection: first its
    /// sending side, once the answer is written, while what the client still sends is read
    /// and dropped, so that the client reads the answer rather than a reset; then the whole
    /// connection when the client closes its side, or after at most 2 s (the read timeout
    /// if shorter).
    private func refuse(_ context: ChannelHandlerContext, _ status: HTTPResponse.Status, _ code: String, _ message: String) {
        answered = true
        cancelTimer()
        logger.notice("request refused", metadata: ["status": "\(status.code)", "error": "\(code)", "message": "\(message)"])
        let body = context.channel.allocator.buffer(bytes: WireErrorBody(error: code, message: message).json)
        let head = HTTPResponse(status: status, headerFields: [
            .contentType: "application/json", .contentLength: String(body.readableBytes), .connection: "close",
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(mode: .output).assumeIsolated().whenFailure { _ in context.close(promise: nil) }
        }
        context.eventLoop.assumeIsolated().scheduleTask(in: min(clock.timeouts.read, .seconds(2))) { context.close(promise: nil) }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
        timerDeadline = nil
    }
}

@available(*, unavailable)
extension ConnectionGuard: Sendable {}

/// The error a request's body fails with when the request timed out.
struct RequestTimedOut: Error {}

/// That bytes arrived on a connection: sent by ``ByteTap`` to ``ConnectionGuard`` before the
/// HTTP decoder sees them (a request's head makes no HTTP part until it is whole).
struct BytesArrived {}

/// At the front of a connection's pipeline: tells the ``ConnectionGuard`` behind the HTTP
/// decoder of every read from the socket.
final class ByteTap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireUserInboundEventTriggered(BytesArrived())
        context.fireChannelRead(data)
    }
}

@available(*, unavailable)
extension ByteTap: Sendable {}
