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
        /// to and `maxBytes` the JSON itself (both answered 413).
        public var limits: WireLimits
        /// The gzip level of responses (0...9).
        public var gzipLevel: Int32

        public init(
            host: String = "127.0.0.1", port: Int = 8080, maxRequestBytes: Int = 64 << 20,
            limits: WireLimits = WireLimits(), gzipLevel: Int32 = Gzip.defaultLevel
        ) {
            precondition(maxRequestBytes > 0, "maxRequestBytes must be positive")
            precondition((0...9).contains(gzipLevel), "gzip level must be within 0...9")
            self.host = host
            self.port = port
            self.maxRequestBytes = maxRequestBytes
            self.limits = limits
            self.gzipLevel = gzipLevel
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

        public init() {}
    }
}
