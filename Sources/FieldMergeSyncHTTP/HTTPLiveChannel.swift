import FieldMergeProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The live channel over HTTP (Specs/live.md): the server's events by Server-Sent Events
/// (`GET /sync/events`) or, where a proxy buffers event streams, by long-poll
/// (`GET /sync/poll`), with `URLSession`.
///
/// Events are read as their bytes arrive, whatever the length of the response. A stream of
/// ``events(since:schema:)`` finishes when the server ends its event stream (each has a bounded
/// lifetime) and throws when the channel fails; either way the client opens it again:
///
/// - no bytes at all, not even a keep-alive, for ``Configuration/silenceTimeout``, an
///   unreachable server, a dropped connection, a 5xx, 408 or 429: `TransportError`;
/// - any other status: `SyncRequestRejected` with the server's `{"error", "message"}`
///   (`SyncStatus.clientError(status:body:origin:)`, as `HTTPTransport`), after one retry
///   with a refreshed token for a 401;
/// - an event that is not SSE or not a `LiveEvent`, or a line or an event past
///   ``Configuration/maxEventBytes``: the `WireError`.
///
/// Cancelling the task that iterates the stream (or dropping the stream) closes the
/// connection. The channel's `URLSession` is invalidated when the last copy of the channel
/// and the last of its streams are gone.
public struct HTTPLiveChannel: LiveChannel {
    /// How events travel.
    public enum Mode: Sendable, Equatable {
        /// One `GET /sync/events` per stream: a `text/event-stream` that stays open, its
        /// first event `ready`.
        case serverSentEvents
        /// `GET /sync/poll?since=N&wait=S` in a loop, for proxies that hold an event stream
        /// back: the server answers one event as soon as there is one past `N`, or 204 No
        /// Content after `wait` seconds; the next poll asks from the revision of the event
        /// received (or the same `N` after a 204). The stream goes on until it fails or is
        /// cancelled; its events are what the polls answer (the first is `ready` only when
        /// the server answers so).
        case longPoll(wait: Int = 30)
    }

    /// Timeouts, limits and extra headers.
    public struct Configuration: Sendable {
        /// The longest time without a byte from the server, in seconds: from the request
        /// until the response's head (for a long-poll, after its `wait`) and between any two
        /// chunks of the event stream. The server's keep-alives (every 15 s) reset it.
        public var silenceTimeout: Double
        /// The longest line and the longest event data taken, in bytes (a `changes` event
        /// carries a whole catch-up page): 64 MiB by default.
        public var maxEventBytes: Int
        /// Events held for a consumer that lags: past this many, the oldest are dropped (no
        /// event is needed for correctness: a device that missed one notices by its cursor).
        public var bufferedEvents: Int
        /// Headers added to every request.
        public var headers: [String: String]

        public init(
            silenceTimeout: Double = 45, maxEventBytes: Int = 64 << 20,
            bufferedEvents: Int = 16, headers: [String: String] = [:]
        ) {
            self.silenceTimeout = silenceTimeout
            self.maxEventBytes = maxEventBytes
            self.bufferedEvents = bufferedEvents
            self.headers = headers
        }
    }

    /// The sync endpoint the events belong to, e.g. `http://127.0.0.1:8080/sync`.
    public let syncURL: URL
    public let mode: Mode
    public let configuration: Configuration
    let token: HTTPTransport.TokenProvider?
    let owner: SessionOwner
    let download: StreamingDownload

    /// - Parameters:
    ///   - syncURL: The URL of `POST /sync`, as an ``HTTPTransport`` of the same server
    ///     takes: the channel asks `<syncURL>/events` and `<syncURL>/poll`.
    ///   - mode: Server-Sent Events, or long-poll where a proxy buffers event streams.
    ///   - configuration: The silence timeout, the largest event, extra headers.
    ///   - token: The app's bearer token, as ``HTTPTransport/init(url:configuration:token:)``
    ///     takes it: sent as `Authorization: Bearer <token>`, asked again with `refresh:
    ///     true` after a 401 and the request sent once more.
    public init(syncURL: URL, mode: Mode = .serverSentEvents, configuration: Configuration = Configuration(), token: HTTPTransport.TokenProvider? = nil) {
        self.syncURL = syncURL
        self.mode = mode
        self.configuration = configuration
        self.token = token
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.urlCache = nil
        sessionConfiguration.httpCookieStorage = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // The silence timeout is the channel's; an event stream lives as long as the server keeps it.
        sessionConfiguration.timeoutIntervalForResource = 7 * 24 * 3600
        download = StreamingDownload()
        owner = SessionOwner(URLSession(configuration: sessionConfiguration, delegate: download, delegateQueue: nil))
    }

    /// Opens the channel for a device whose cursor is `revision` (see the type's overview
    /// for how the stream ends).
    public func events(since revision: Int64, schema: String?) -> AsyncThrowingStream<LiveEvent, any Error> {
        events(since: revision, schema: schema, subscriptions: nil)
    }

    /// Opens the channel for a device that also subscribes to `subscriptions` (sent as
    /// `subscriptions=project=3,42;…`, Specs/live.md).
    public func events(since revision: Int64, schema: String?, subscriptions: ScopeHoldings?) -> AsyncThrowingStream<LiveEvent, any Error> {
        let schema = Parameters(schema: schema, subscriptions: subscriptions.flatMap { $0.isEmpty ? nil : $0.storedText })
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: LiveEvent.self, bufferingPolicy: .bufferingNewest(max(1, configuration.bufferedEvents)))
        let task = Task { [self] in
            do {
                switch mode {
                case .serverSentEvents: try await streamEvents(since: revision, schema: schema, to: continuation)
                case .longPoll(let wait): try await poll(since: revision, wait: wait, schema: schema, to: continuation)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// One event stream, until the server ends it.
    private func streamEvents(
        since revision: Int64, schema: Parameters, to continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    ) async throws {
        let url = endpoint("events", ["since": String(revision)], schema: schema)
        let answer = try await exchange(url, silence: configuration.silenceTimeout) { continuation.yield($0) }
        if case .refused(let status, let body) = answer {
            throw SyncStatus.clientError(status: status, body: body, origin: url.absoluteString)
        }
    }

    /// Polls until the stream fails or is cancelled.
    private func poll(
        since revision: Int64, wait: Int, schema: Parameters, to continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    ) async throws {
        var since = revision
        while true {
            try Task.checkCancellation()
            let url = endpoint("poll", ["since": String(since), "wait": String(wait)], schema: schema)
            switch try await exchange(url, silence: Double(wait) + configuration.silenceTimeout, { continuation.yield($0) }) {
            case .refused(let status, let body):
                throw SyncStatus.clientError(status: status, body: body, origin: url.absoluteString)
            case .noContent:
                continue
            case .ended(let last?):
                since = last
            case .ended(nil):
                throw WireError(.invalidValue, "GET \(url.path) answered 200 without an event")
            }
        }
    }

    /// What a live request names besides its revision: the schema's fingerprint and the
    /// roots subscribed to (as text), each when given.
    struct Parameters {
        var schema: String?
        var subscriptions: String? = nil
    }

    /// `<syncURL>/<name>` with `query` (and `schema=`, when given) added to what the URL had.
    func endpoint(_ name: String, _ query: KeyValuePairs<String, String>, schema: String? = nil) -> URL {
        endpoint(name, query, schema: Parameters(schema: schema))
    }

    /// `<syncURL>/<name>` with `query`, `schema=` and `subscriptions=` (when given) added.
    func endpoint(_ name: String, _ query: KeyValuePairs<String, String>, schema parameters: Parameters) -> URL {
        Self.endpoint(syncURL, name, query, schema: parameters.schema, subscriptions: parameters.subscriptions)
    }

    /// `<syncURL>/<name>` with `query`, `schema=` and `subscriptions=` (when given) added to
    /// what the URL had: the live endpoints of a sync URL, for every channel over HTTP. With a
    /// schema, also `pages=scoped`: the events go to a `SyncClient` (it names its schema),
    /// which applies a page of a server with scopes only when the page's `scopes` are what
    /// it holds, so such a server may send it pages rather than pokes; and `encoding=gzip`:
    /// it reads pages gzip'd in base64 (`changes-gzip`, read back by `LiveEvent`).
    package static func endpoint(
        _ syncURL: URL, _ name: String, _ query: KeyValuePairs<String, String>, schema: String?, subscriptions: String?
    ) -> URL {
        let url = syncURL.appendingPathComponent(name)
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        components.queryItems = (components.queryItems ?? []) + query.map { URLQueryItem(name: $0.key, value: $0.value) }
            + (schema.map {
                [URLQueryItem(name: "schema", value: $0), URLQueryItem(name: "pages", value: "scoped"), URLQueryItem(name: "encoding", value: "gzip")]
            } ?? [])
            + (subscriptions.map { [URLQueryItem(name: "subscriptions", value: $0)] } ?? [])
        return components.url ?? url
    }
}
