import FieldMerge
import FieldMergeProtocol

/// Where an exchange's request goes: its server, and the codec that reads it.
public struct SyncDestination: Sendable {
    public var server: RevisionServer
    public var codec: WireCodec
    /// The hold on a tenant's server (``TenantDirectory``), released by the exchange once
    /// the request is answered or refused; nil for a server that is not leased.
    public var lease: TenantDirectory.Lease?

    public init(server: RevisionServer, codec: WireCodec, lease: TenantDirectory.Lease? = nil) {
        self.server = server
        self.codec = codec
        self.lease = lease
    }
}

/// Where an exchange finds the server of a request: one ``RevisionServer``, or one per
/// tenant (the HTTP endpoint's host). Found once per request.
public protocol SyncRoute: Sendable {
    /// The server the request of `identity` goes to, and the codec that reads it.
    /// - Throws: ``ServerError`` (``ServerError/Code/forbidden`` for no valid tenant).
    func destination(for identity: SyncIdentity?) async throws(ServerError) -> SyncDestination
    /// Answers one decoded request at `destination` (one storage transaction), with the
    /// server's revision before and after it; by default the destination's server answers it.
    /// - Throws: ``ServerError``; the server has then changed nothing.
    func handle(_ request: SyncRequest, identity: SyncIdentity?, at destination: SyncDestination) async throws(ServerError) -> SyncExchange.Handled
}

extension SyncRoute {
    public func handle(_ request: SyncRequest, identity: SyncIdentity?, at destination: SyncDestination) async throws(ServerError) -> SyncExchange.Handled {
        try await destination.server.handleReporting(request, identity: identity)
    }
}

/// One server, its codec made once.
public struct SingleServerRoute: SyncRoute {
    public let destination: SyncDestination

    public init(_ server: RevisionServer, limits: WireLimits = WireLimits()) {
        destination = SyncDestination(server: server, codec: server.wireCodec(limits: limits))
    }

    public func destination(for identity: SyncIdentity?) async throws(ServerError) -> SyncDestination { destination }
}

/// One exchange of the revision protocol, bytes in and a status plus bytes out: inflate,
/// decode, the server (one transaction), encode, gzip. Every transport runs it (the HTTP
/// endpoint, ``InProcessTransport``, the simulation's server), so that every failure has one
/// status everywhere (``ServerError/status``, ``WireError/status``, Specs/http.md §9) and a
/// client sees it alike through each (``SyncStatus/clientError(status:detail:origin:)``).
public struct SyncExchange: Sendable {
    /// What the server did with a request it answered.
    public struct Handled: Sendable {
        public var response: SyncResponse
        public var revisionBefore: Int64
        public var revisionAfter: Int64
        /// Whether the answer is a stored reply: the request was a retry whose first answer
        /// was lost (Specs/protocol.md §2), answered again without changing anything.
        public var replayed: Bool
        /// The codec that writes the answer: the one of the schema version the request came
        /// from, which the server resolved from its fingerprint (once per request). Nil from a
        /// route outside the package: the exchange then resolves it again.
        package var answering: WireCodec?

        public init(response: SyncResponse, revisionBefore: Int64, revisionAfter: Int64, replayed: Bool = false) {
            self.response = response
            self.revisionBefore = revisionBefore
            self.revisionAfter = revisionAfter
            self.replayed = replayed
        }
    }

    /// The answer to one exchange.
    public struct Reply: Sendable {
        /// ``SyncStatus/ok``, or the failure's status; a failure changed nothing.
        public var status: Int
        /// The encoded response (gzip'd when ``isGzip``), or the JSON error body.
        public var body: [UInt8]
        public var isGzip: Bool
        /// The failure, when ``status`` is not ``SyncStatus/ok``.
        public var error: WireErrorBody?
        /// The request, when it could be decoded.
        public var request: SyncRequest?
        /// What the server did, when it answered.
        public var handled: Handled?
        /// The request's JSON and the response's JSON, in bytes (0 where there was none).
        public var requestBytes = 0, responseBytes = 0

        /// The error a client throws for this reply, nil when it succeeded
        /// (``SyncStatus/clientError(status:detail:origin:)``).
        public func clientError(origin: String) -> (any Error)? {
            status == SyncStatus.ok ? nil : SyncStatus.clientError(status: status, detail: error, origin: origin)
        }
    }

    /// The largest request JSON inflated from a gzip'd body.
    public var inflateLimit: Int
    /// The gzip level of responses.
    public var gzipLevel: Int32
    /// Hears the time of decoding requests and encoding answers.
    public var probe: (any SyncProbe)?

    public init(inflateLimit: Int = WireLimits().maxDecompressedBytes, gzipLevel: Int32 = Gzip.defaultLevel, probe: (any SyncProbe)? = nil) {
        self.inflateLimit = inflateLimit
        self.gzipLevel = gzipLevel
        self.probe = probe
    }

    /// Runs one exchange.
    ///
    /// - Parameters:
    ///   - body: The request's bytes as they arrived.
    ///   - gzip: Whether `body` is gzip'd (the transport's `Content-Encoding`).
    ///   - answerGzip: Whether to gzip the response (an error body never is).
    ///   - identity: Who sent it, as the transport authenticated it.
    ///   - route: Where the request's server is.
    public func run(
        _ body: [UInt8], gzip: Bool, answerGzip: Bool, identity: SyncIdentity?, route: some SyncRoute
    ) async -> Reply {
        let destination: SyncDestination
        do {
            destination = try await route.destination(for: identity)
        } catch {
            return Self.failure(error.status, error.body)
        }
        let reply = await run(body, gzip: gzip, answerGzip: answerGzip, identity: identity, route: route, at: destination)
        await destination.lease?.release()
        return reply
    }

    /// The exchange once the request's destination is found (and held, for a tenant).
    private func run(
        _ body: [UInt8], gzip: Bool, answerGzip: Bool, identity: SyncIdentity?, route: some SyncRoute, at destination: SyncDestination
    ) async -> Reply {
        var requestBytes = 0
        var request: SyncRequest?
        do {
            let codec = destination.codec
            let decoded = try probe.measure(.serverDecode) { () throws(WireError) in
                let json = gzip ? try Gzip.decompress(body, limit: inflateLimit) : body
                requestBytes = json.count
                return try codec.decodeRequest(json)
            }
            request = decoded
            let handled = try await route.handle(decoded, identity: identity, at: destination)
            // A client of an older schema version is answered in its own (the server resolved it).
            let answering = handled.answering ?? codec.codec(answering: decoded)
            let encoded = probe.measure(.responseEncode) { answering.encode(handled.response) }
            let answer = answerGzip ? probe.measure(.responseGzip) { Gzip.compress(encoded, level: gzipLevel) } : encoded
            return Reply(
                status: SyncStatus.ok, body: answer, isGzip: answerGzip, request: decoded, handled: handled,
                requestBytes: requestBytes, responseBytes: encoded.count)
        } catch let error as WireError {
            return Self.failure(error.status, WireErrorBody(error), request: request, requestBytes: requestBytes)
        } catch let error as ServerError {
            return Self.failure(error.status, error.body, request: request, requestBytes: requestBytes)
        } catch {
            let wrapped = ServerError.wrapping(error)
            return Self.failure(wrapped.status, wrapped.body, request: request, requestBytes: requestBytes)
        }
    }

    /// A failed exchange: the status and its JSON error body.
    public static func failure(_ status: Int, _ error: WireErrorBody, request: SyncRequest? = nil, requestBytes: Int = 0) -> Reply {
        Reply(status: status, body: error.json, isGzip: false, error: error, request: request, requestBytes: requestBytes)
    }
}
