import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite

/// Bytes and requests that crossed the wire.
public struct WireMetrics: Sendable, Equatable {
    /// Requests that reached the server (or the remote transport).
    public var requests = 0
    /// Requests the server could not read (a corrupted body) and answered with an error.
    public var rejected = 0
    /// Bodies as sent: gzip'd.
    public var gzipBytesUp = 0, gzipBytesDown = 0
    /// The JSON inside them.
    public var rawBytesUp = 0, rawBytesDown = 0
    public init() {}

    static func - (a: WireMetrics, b: WireMetrics) -> WireMetrics {
        var d = WireMetrics()
        (d.requests, d.rejected) = (a.requests - b.requests, a.rejected - b.rejected)
        (d.gzipBytesUp, d.gzipBytesDown) = (a.gzipBytesUp - b.gzipBytesUp, a.gzipBytesDown - b.gzipBytesDown)
        (d.rawBytesUp, d.rawBytesDown) = (a.rawBytesUp - b.rawBytesUp, a.rawBytesDown - b.rawBytesDown)
        return d
    }
}

/// The server side of the simulation: a ``RevisionServer`` in this process (which can be
/// restarted from its file), or a remote server behind a caller's transport. It counts what
/// crosses the wire, raw and gzip'd.
public actor ServerEndpoint: SyncTransport {
    private var server: RevisionServer? {
        didSet { route = server.map { [identify] in ClientAsUser(server: SingleServerRoute($0), identify: identify) } }
    }
    /// Who a request's client id is (nil: the client id itself is the user, without roles).
    private let identify: (@Sendable (String?) -> SyncIdentity?)?
    /// The in-process server's route, its codec made once per server.
    private var route: ClientAsUser?
    private let remote: (any SyncTransport)?
    private var reopen: (@Sendable () async throws -> RevisionServer)?
    public private(set) var metrics = WireMetrics()

    /// A server in this process; `reopen` opens it again from its storage (for a restart).
    /// `identify` names the user (and roles) of a request's client id.
    package init(
        server: sending RevisionServer, reopen: @escaping @Sendable () async throws -> RevisionServer,
        identify: (@Sendable (String?) -> SyncIdentity?)? = nil
    ) {
        self.identify = identify
        route = ClientAsUser(server: SingleServerRoute(server), identify: identify)
        self.server = server
        self.reopen = reopen
        remote = nil
    }

    /// A remote server.
    init(remote: any SyncTransport, schema: Schema) {
        self.remote = remote
        identify = nil
        server = nil
        route = nil
        reopen = nil
    }

    /// Whether the server runs in this process (and can be inspected and restarted).
    var isLocal: Bool { remote == nil }

    /// The server in this process, nil while it restarts (and for a remote one).
    var runningServer: RevisionServer? { server }

    /// Who a device's live channel speaks for: the same user as its requests.
    nonisolated func liveIdentity(_ clientID: String) -> SyncIdentity? {
        identify.map { $0(clientID) } ?? SyncIdentity(user: clientID)
    }

    public func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        metrics.requests += 1
        metrics.gzipBytesUp += body.count
        let limit = WireLimits().maxDecompressedBytes
        if let remote {
            let answer = try await remote.send(body, gzip: gzip)
            metrics.gzipBytesDown += answer.count
            metrics.rawBytesUp += gzip ? ((try? Gzip.decompress(body, limit: limit).count) ?? 0) : body.count
            metrics.rawBytesDown += (try? Gzip.decompressIfGzip(answer, limit: limit).count) ?? 0
            return answer
        }
        guard let route else { throw TransportError("the server is down") }
        let reply = await SyncExchange().run(body, gzip: gzip, answerGzip: gzip, identity: nil, route: route)
        metrics.rawBytesUp += reply.requestBytes
        if let error = reply.clientError(origin: "the simulation's server") {
            // As over HTTP: a body it cannot read is refused (400), a failing storage is 500.
            metrics.rejected += 1
            throw error
        }
        metrics.rawBytesDown += reply.responseBytes
        metrics.gzipBytesDown += reply.body.count
        return reply.body
    }

    /// Closes the server's database and opens it again from its file.
    func restart() async throws {
        guard let reopen, let old = server else { return }
        server = nil  // before closing: a device reconnecting meanwhile finds the server down
        await old.close()
        server = try await reopen()
    }

    /// Closes the server and opens its file with `open` from now on (a newer schema version:
    /// the file migrates). - Returns: What the migration changed.
    func upgrade(_ open: @escaping @Sendable () throws -> RevisionServer) async throws -> [SchemaChange] {
        guard let old = server else { throw SimulationError("only a server in this process can be upgraded") }
        server = nil
        await old.close()
        let upgraded = try open()
        (server, reopen) = (upgraded, open)
        return upgraded.migrations
    }

    /// Runs `body` with the in-process server; nil for a remote one.
    func withServer<T: Sendable>(_ body: (RevisionServer) async throws -> T) async rethrows -> T? {
        guard let server else { return nil }
        return try await body(server)
    }
}

/// The in-process server, each request sent under its client id as the user, as a token's
/// subject would name it over HTTP (or as `identify` names it).
private struct ClientAsUser: SyncRoute {
    let server: SingleServerRoute
    let identify: (@Sendable (String?) -> SyncIdentity?)?

    func destination(for identity: SyncIdentity?) async throws(ServerError) -> SyncDestination { server.destination }

    func handle(_ request: SyncRequest, identity: SyncIdentity?, at destination: SyncDestination) async throws(ServerError) -> SyncExchange.Handled {
        let named = identify.map { $0(request.clientID) } ?? request.clientID.map { SyncIdentity(user: $0) }
        return try await server.handle(request, identity: identity ?? named, at: destination)
    }
}
