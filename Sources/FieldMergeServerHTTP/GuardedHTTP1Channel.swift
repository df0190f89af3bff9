import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// HTTP/1.1 as Hummingbird's `HTTP1Channel` serves it (its decoder limits, keep-alive and
/// graceful shutdown), with the server's connection limit (``ConnectionRegistry``) and a
/// ``ConnectionGuard`` on each connection: its timeouts and JSON answers to bad HTTP.
struct GuardedHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let timeouts: ConnectionClock.Timeouts
    let registry: ConnectionRegistry

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let registry = registry
        let timeouts = timeouts
        // A failed set-up would end the server's accept loop (the error reaches the server
        // channel): a refused connection is set up and closed, and nothing here fails.
        if let evicted = registry.admit(channel, now: .now()) {
            if evicted === channel {
                logger.debug("connection limit reached, every connection answered: closing the new one")
                channel.eventLoop.execute { channel.close(promise: nil) }  // once set up
            } else {
                logger.debug("connection limit reached: closing the connection waiting longest", metadata: ["limit": "\(registry.limit)"])
                evicted.close(promise: nil)
            }
        }
        channel.closeFuture.whenComplete { _ in registry.remove(channel) }
        try? channel.pipeline.syncOperations.addHandler(ByteTap(), position: .first)
        let http1 = HTTP1Channel(
            responder: responder,
            configuration: .init(additionalChannelHandlers: [ConnectionGuard(timeouts: timeouts, registry: registry, logger: logger)]))
        return http1.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

extension SyncHTTPServer.Configuration {
    var connectionTimeouts: ConnectionClock.Timeouts {
        .init(read: TimeAmount(readTimeout), request: TimeAmount(requestTimeout), idle: TimeAmount(idleTimeout), write: TimeAmount(writeTimeout))
    }
}
