import FieldMergeFiles
import FieldMergeProtocol
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// One request of ``NIOAttachmentTransport`` on a connection of its own: the request goes
/// out (its body written as the socket takes it) while the response is read, so an answer
/// the server gives before the body ended (a 401, a 409) is heard, not lost in a reset.
struct AttachmentExchange {
    typealias Connection = NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>

    /// What came back: the status, the headers, and the start (64 KiB) of a body that did
    /// not go into a file (an error's `{"error", "message"}`).
    struct Response {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    /// The most of a body kept in memory: the server's error JSON is far smaller.
    static let maxKeptBody = 64 << 10

    let host: String
    let port: Int
    let group: any EventLoopGroup
    /// The longest wait for the connection, and for any byte to go or come.
    let timeout: TimeAmount
    /// The URL in messages.
    let origin: String

    /// Sends `head`, then what `send` writes (the body; `.end` follows it), and reads the
    /// response: a 2xx body goes into `target`'s file as it arrives (when given: see
    /// ``BodyFileWriter``), any other is kept (see ``Response``).
    /// - Throws: `TransportError` when the connection fails or closes before the response
    ///   ended; the `AttachmentFileError` of a file that could not be read or written.
    func run(
        _ head: HTTPRequestHead,
        send: (@Sendable (NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>) async throws -> Void)? = nil,
        bodyInto target: BodyFileTarget? = nil
    ) async throws -> Response {
        try Task.checkCancellation()
        let connection = try await connect(target)
        let sending = SendState()
        let outcome: Result<Response, any Error> = try await connection.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    do {
                        try await outbound.write(.head(head))
                        if let send { try await send(outbound) }
                        try await outbound.write(.end(nil))
                        sending.finish(nil)
                    } catch {
                        sending.finish(error)
                        // The response cannot come now: stop reading it.
                        connection.channel.close(promise: nil)
                    }
                }
                let outcome: Result<Response, any Error>
                do {
                    outcome = .success(try await read(inbound))
                } catch {
                    outcome = .failure(error)
                }
                // An answer before the body was all sent (a refusal): the rest is not wanted.
                if !sending.finished { connection.channel.close(promise: nil) }
                tasks.cancelAll()
                try await tasks.waitForAll()
                return outcome
            }
        }
        switch outcome {
        case .success(let response): return response
        case .failure(let error):
            if let fileError = sending.error as? AttachmentFileError { throw fileError }
            if error is AttachmentFileError { throw error }
            try Task.checkCancellation()
            if error is TransportError { throw error }
            let reason = sending.error.map { "\($0)" } ?? "\(error)"
            throw TransportError("\(origin): \(reason)")
        }
    }

    /// Reads one response to its end.
    private func read(_ inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>) async throws -> Response {
        var response = Response(status: 0, headers: HTTPHeaders(), body: [])
        for try await part in inbound {
            switch part {
            case .head(let head):
                response.status = Int(head.status.code)
                response.headers = head.headers
            case .body(let buffer):
                if response.body.count < Self.maxKeptBody {
                    response.body += buffer.readableBytesView.prefix(Self.maxKeptBody - response.body.count)
                }
            case .end:
                return response
            }
        }
        throw TransportError("the connection to \(origin) closed before the response ended")
    }

    /// A new connection with the HTTP/1.1 client's handlers (and `target`'s writer), reads
    /// paced by the consumer.
    private func connect(_ target: BodyFileTarget?) async throws -> Connection {
        let timeout = timeout
        let origin = origin
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            // Reads of up to 256 KiB: few enough pieces for a fast download, each small enough
            // to stay in the cache from the socket through the file to the hash.
            .channelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 16 << 10, initial: 64 << 10, maximum: 256 << 10))
            // Enough queued for the socket while the next chunk is read from the file.
            .channelOption(.writeBufferWaterMark, value: .init(low: 1 << 20, high: 2 << 20))
        do {
            return try await bootstrap.connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.addHandlers(to: channel.pipeline.syncOperations, timeout: timeout, origin: origin, target: target)
                    return try Connection(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8)))
                }
            }
        } catch {
            try Task.checkCancellation()
            throw TransportError("cannot connect to \(origin): \(error)")
        }
    }
}

extension AttachmentExchange {
    /// The handlers of a connection, in their order: HTTP/1.1, the silence timeout, and the
    /// file writer of a download (`target`) after it, so that each piece of a body that keeps
    /// arriving counts as a read and is not taken for silence.
    static func addHandlers(
        to pipeline: ChannelPipeline.SynchronousOperations, timeout: TimeAmount, origin: String, target: BodyFileTarget?
    ) throws {
        try pipeline.addHTTPClientHandlers()
        try pipeline.addHandlers([IdleStateHandler(allTimeout: timeout), SilenceHandler(origin: origin)])
        if let target { try pipeline.addHandler(BodyFileWriter(target)) }
    }
}

/// How the sending half of an exchange ended.
private final class SendState: Sendable {
    private let state = Mutex<(finished: Bool, error: (any Error)?)>((false, nil))

    func finish(_ error: (any Error)?) { state.withLock { $0 = (true, error) } }
    var finished: Bool { state.withLock { $0.finished } }
    var error: (any Error)? { state.withLock { $0.error } }
}

/// Fails the connection when nothing went either way for the idle handler's time.
private final class SilenceHandler: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let origin: String

    init(origin: String) { self.origin = origin }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.fireErrorCaught(TransportError("no bytes went to or came from \(origin) for too long"))
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
