import FieldMergeProtocol
import FieldMergeSyncHTTP
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The live channel's Server-Sent Events (`GET /sync/events`, Specs/live.md) over SwiftNIO,
/// for Linux processes that hold many devices: a backend worker that syncs as a device, a
/// load test, `fieldmerge-server bench live`.
///
/// An app uses `HTTPLiveChannel`: URLSession is the platform's own on
/// Apple's systems. On Linux, FoundationNetworking's URLSession wakes every open transfer
/// about once a second and moves each chunk across several threads; with 1,000 event streams
/// in one process that is a whole core while nothing changes (Specs/benchmarks.md, "live").
/// This channel reads every stream of the process on the event loops of one
/// `EventLoopGroup` (the process's shared one unless given), parses each event where it
/// arrives and hands it to the device at once: an idle stream costs no CPU at all.
///
/// It behaves as `HTTPLiveChannel` in `.serverSentEvents` mode, with the same errors:
/// a `TransportError` for an unreachable server, a dropped connection, a 5xx, 408 or 429, or
/// no byte for the configuration's `silenceTimeout`; a `SyncRequestRejected` for any other
/// status (after one retry with a refreshed token for a 401); the `WireError` of an event it
/// cannot read. Plain HTTP only (loopback, a sidecar, inside a data centre), and no long-poll.
public struct NIOLiveChannel: LiveChannel {
    /// Timeouts, limits and extra headers.
    public typealias Configuration = HTTPLiveChannel.Configuration

    /// A URL the channel cannot use: not `http://host[:port]/…`.
    public struct UnsupportedURL: Error, CustomStringConvertible {
        public let url: URL
        public var description: String {
            "NIOLiveChannel speaks plain HTTP to a host: '\(url.absoluteString)' is not an http:// URL with a host (use HTTPLiveChannel for https)"
        }
    }

    /// The sync endpoint the events belong to, e.g. `http://127.0.0.1:8080/sync`.
    public let syncURL: URL
    public let configuration: Configuration
    let token: HTTPTransport.TokenProvider?
    let group: any EventLoopGroup
    let host: String
    let port: Int

    /// - Parameters:
    ///   - syncURL: The URL of `POST /sync`: the channel asks `<syncURL>/events`.
    ///   - configuration: The silence timeout, the largest event, extra headers.
    ///   - token: The bearer token, as `HTTPTransport` takes it: asked again with `refresh:
    ///     true` after a 401 and the request sent once more.
    ///   - group: The event loops that carry the connections; by default the process's
    ///     shared `MultiThreadedEventLoopGroup`.
    /// - Throws: ``UnsupportedURL`` for a URL that is not `http://` with a host.
    public init(
        syncURL: URL, configuration: Configuration = Configuration(), token: HTTPTransport.TokenProvider? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(UnsupportedURL) {
        guard syncURL.scheme?.lowercased() == "http", let host = syncURL.host, !host.isEmpty else { throw UnsupportedURL(url: syncURL) }
        self.syncURL = syncURL
        self.configuration = configuration
        self.token = token
        self.group = group
        self.host = host
        port = syncURL.port ?? 80
    }

    public func events(since revision: Int64, schema: String?) -> AsyncThrowingStream<LiveEvent, any Error> {
        events(since: revision, schema: schema, subscriptions: nil)
    }

    /// Opens the event stream for a device at `revision` (see the type's overview for how it
    /// ends); `subscriptions` are sent as `subscriptions=project=3,42;…` (Specs/live.md).
    public func events(since revision: Int64, schema: String?, subscriptions: ScopeHoldings?) -> AsyncThrowingStream<LiveEvent, any Error> {
        let url = HTTPLiveChannel.endpoint(
            syncURL, "events", ["since": String(revision)], schema: schema,
            subscriptions: subscriptions.flatMap { $0.isEmpty ? nil : $0.storedText })
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: LiveEvent.self, bufferingPolicy: .bufferingNewest(max(1, configuration.bufferedEvents)))
        let task = Task { [self] in
            do {
                var answer = try await exchange(url, token: try await token?(false), continuation)
                if case .refused(401, _) = answer, let token {
                    answer = try await exchange(url, token: try await token(true), continuation)
                }
                if case .refused(let status, let body) = answer {
                    throw SyncStatus.clientError(status: status, body: body, origin: url.absoluteString)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// One GET of `url` on a connection of its own; its events go to `continuation` as they
    /// arrive.
    private func exchange(
        _ url: URL, token: String?, _ continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    ) async throws -> EventStreamHandler.Answer {
        try Task.checkCancellation()
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: syncURL.port.map { "\(host):\($0)" } ?? host)
        for (name, value) in configuration.headers { headers.add(name: name, value: value) }
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        headers.add(name: "Accept", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-cache")
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        let path = (components?.percentEncodedPath).flatMap { $0.isEmpty ? nil : $0 } ?? "/"
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: path + (components?.percentEncodedQuery.map { "?" + $0 } ?? ""), headers: headers)
        let silence = TimeAmount.nanoseconds(Int64(min(max(configuration.silenceTimeout, 0.001), 1e9) * 1e9))
        let loop = group.next()
        let answer = loop.makePromise(of: EventStreamHandler.Answer.self)
        let handler = EventStreamHandler.Settings(
            request: head, url: url, silence: configuration.silenceTimeout, maxEventBytes: configuration.maxEventBytes, answer: answer,
            onEvent: { continuation.yield($0) })
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(silence)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandlers([
                        IdleStateHandler(readTimeout: silence), EventStreamHandler(handler),
                    ])
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            let failure = TransportError("cannot connect to \(url.absoluteString): \(error)")
            answer.fail(failure)
            throw failure
        }
        return try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }
}
