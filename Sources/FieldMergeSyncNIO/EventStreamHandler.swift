import FieldMergeProtocol
import Foundation
import NIOCore
import NIOHTTP1

/// One `GET /sync/events` on its connection: sends the request, parses the event stream on
/// the event loop as its bytes arrive, hands each event on, and completes `answer` when the
/// response ends (or fails it).
final class EventStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    /// What one GET came to, once its response ended.
    enum Answer: Sendable {
        /// A status outside 2xx, and the start of its body (the server's error JSON).
        case refused(status: Int, body: [UInt8])
        /// The event stream ended.
        case ended
    }

    struct Settings {
        let request: HTTPRequestHead
        let url: URL
        let silence: Double
        let maxEventBytes: Int
        let answer: EventLoopPromise<Answer>
        let onEvent: @Sendable (LiveEvent) -> Void
    }

    /// The most of an error body kept: the server's `{"error", "message"}` is far smaller.
    static let maxErrorBody = 64 << 10

    private let settings: Settings
    private var parser: ServerSentEventParser
    private var status = 0
    private var errorBody: [UInt8] = []
    private var done = false

    init(_ settings: Settings) {
        self.settings = settings
        parser = ServerSentEventParser(maxBytes: settings.maxEventBytes)
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(settings.request)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            guard (200..<300).contains(status), status != 204 else { return }
            let contentType = head.headers.first(name: "Content-Type")
            let mediaType = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            if mediaType != "text/event-stream" {
                fail(context, TransportError("HTTP \(status) from \(settings.url.absoluteString) is \(contentType ?? "untyped"), not text/event-stream"))
            }
        case .body(let buffer):
            guard (200..<300).contains(status) else {
                errorBody += buffer.readableBytesView.prefix(Self.maxErrorBody - errorBody.count)
                return
            }
            do {
                for message in try parser.feed(buffer.readableBytesView) {
                    settings.onEvent(try LiveEvent(type: message.type, id: message.id, data: message.data))
                }
            } catch {
                fail(context, error)
            }
        case .end:
            done = true
            settings.answer.succeed((200..<300).contains(status) ? .ended : .refused(status: status, body: errorBody))
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            fail(context, TransportError("no bytes for \(settings.silence) s from \(settings.url.absoluteString)"))
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context, TransportError("\(settings.url.absoluteString): \(error)"))
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Closed before the response ended: the server went away (or the consumer left).
        fail(context, TransportError("the connection to \(settings.url.absoluteString) closed before the response ended"))
        context.fireChannelInactive()
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        guard !done else { return }
        done = true
        settings.answer.fail(error)
        context.close(promise: nil)
    }
}
