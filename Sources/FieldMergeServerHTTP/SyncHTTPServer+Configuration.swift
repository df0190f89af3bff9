import FieldMergeServer
import FieldMergeProtocol

extension SyncHTTPServer {
    /// Where the server listens and what it accepts.
    public struct Configuration: Sendable {
        /// The address to bind: `127.0.0.1` (the default) serves this machine only.
        public var host: String
        /// The TCP port; 0 asks the system for a free one (see `onListening`).
        public var port: Int
        /// The largest request body accepted as it arrives on the wire (gzip'd or not), in
        /// bytes; a larger one is answered 413 without being decoded. 64 MiB by default,
        /// room for a change set of about 100,000 records gzip'd.
        public var maxRequestBytes: Int
        /// The decoder's bounds: `maxDecompressedBytes` caps what a gzip'd body may inflate
        /// to and `maxBytes` the JSON itself (both answered 413). A gzip'd body inflates to
        /// no more than the smallest of ``maxRequestBytes``, `maxBytes` and
        /// `maxDecompressedBytes`: 64 MiB with the defaults.
        public var limits: WireLimits
        /// The gzip level of responses (0...9).
        public var gzipLevel: Int32
        /// How long the server waits for the bytes of a request: from a new connection's
        /// opening to its first byte, and between two reads of a request not yet whole (its
        /// head or its body). 10 seconds by default. The connection is then closed, after a
        /// 408 `requestTimeout` when some of the request had arrived.
        public var readTimeout: Duration
        /// How long a whole request, head and body, may take to arrive, from its first byte
        /// (a client that sends a byte now and then, never pausing for ``readTimeout``, is
        /// cut here): 408 `requestTimeout`, then the connection is closed. 120 seconds by
        /// default: a 64 MiB body needs 4.5 Mbit/s, a change set of a few thousand records
        /// far less.
        public var requestTimeout: Duration
        /// How long a kept-alive connection may wait for its next request after a response
        /// ends; it is then closed without a word. 30 seconds by default.
        ///
        /// None of the three timeouts applies while the server prepares or writes a response:
        /// a response is never cut, however long it streams.
        public var idleTimeout: Duration
        /// The most connections open at once, 512 by default (half the usual 1,024 open files
        /// of a process, leaving room for the database and logs). A new connection beyond it
        /// closes the connection that has been waiting the longest for its request (idle, or
        /// receiving one that is not whole yet), or is itself closed at once when every open
        /// connection is being answered.
        public var maxConnections: Int
        /// How long a response may wait for a client that does not read it (the connection
        /// cannot take more bytes) before the connection is closed: a live subscriber that
        /// stopped reading, a download that stalled. 30 seconds by default.
        public var writeTimeout: Duration = .seconds(30)
        /// The longest a `GET /sync/events` connection lasts before the server ends it (the
        /// client opens another): 5 minutes by default, less up to a tenth at random.
        public var liveLifetime: Duration = .seconds(300)
        /// How long a live connection may be quiet before a keep-alive comment goes: 15 s.
        public var liveKeepAlive: Duration = .seconds(15)
        /// The longest a `GET /sync/poll` waits for an event: 60 s (its `wait` asks for less).
        public var longPollMaxWait: Duration = .seconds(60)
        /// The endpoint's metrics, served as `GET /metrics`; nil (the default): no metrics
        /// are recorded and `GET /metrics` is answered 404.
        public var metrics: SyncMetrics?
        /// The operator's console, served as `GET /console` (a page) and
        /// `GET /console/api/overview` (its data); nil (the default): 404 on those paths.
        public var console: SyncConsole?
        /// The attachment endpoints (`/attachments/<sha256>`); nil (the default): 404 there.
        /// Served for one data set only: a multi-tenant endpoint answers 501.
        public var attachments: Attachments?

        public init(
            host: String = "127.0.0.1", port: Int = 8080, maxRequestBytes: Int = 64 << 20,
            limits: WireLimits = WireLimits(), gzipLevel: Int32 = Gzip.defaultLevel,
            readTimeout: Duration = .seconds(10), requestTimeout: Duration = .seconds(120),
            idleTimeout: Duration = .seconds(30), maxConnections: Int = 512
        ) {
            precondition(maxRequestBytes > 0, "maxRequestBytes must be positive")
            precondition((0...9).contains(gzipLevel), "gzip level must be within 0...9")
            precondition(readTimeout > .zero && requestTimeout > .zero && idleTimeout > .zero, "timeouts must be positive")
            precondition(maxConnections > 0, "maxConnections must be positive")
            self.host = host
            self.port = port
            self.maxRequestBytes = maxRequestBytes
            self.limits = limits
            self.gzipLevel = gzipLevel
            self.readTimeout = readTimeout
            self.requestTimeout = requestTimeout
            self.idleTimeout = idleTimeout
            self.maxConnections = maxConnections
        }
    }

    /// Requests served since start, by outcome (for tests and operators).
    public struct Statistics: Sendable, Equatable {
        /// `POST /sync` requests answered 200.
        public var syncs = 0
        /// Of those, requests whose body arrived gzip'd.
        public var gzipRequests = 0
        /// Of those, responses sent gzip'd.
        public var gzipResponses = 0
        /// Requests answered 400 or 413.
        public var rejected = 0
        /// `GET /sync/events` subscriptions opened.
        public var liveSubscriptions = 0

        public init() {}
    }
}
