import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer

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
    private var server: RevisionServer?
    private let remote: (any SyncTransport)?
    private var reopen: (@Sendable () throws -> RevisionServer)?
    private var codec: WireCodec
    public private(set) var metrics = WireMetrics()

    /// A server in this process; `reopen` opens it again from its file (for a restart).
    init(server: sending RevisionServer, reopen: @escaping @Sendable () throws -> RevisionServer) {
        codec = server.wireCodec()
        self.server = server
        self.reopen = reopen
        remote = nil
    }

    /// A remote server.
    init(remote: any SyncTransport, schema: Schema) {
        codec = WireCodec(schema: schema)
        self.remote = remote
        server = nil
        reopen = nil
    }

    /// Whether the server runs in this process (and can be inspected and restarted).
    var isLocal: Bool { remote == nil }

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
        guard let server else { throw TransportError("the server is down") }
        let response: SyncResponse, answering: WireCodec
        do {
            let json = gzip ? try Gzip.decompress(body, limit: limit) : body
            metrics.rawBytesUp += json.count
            // The client id stands for the authenticated user, as a token's subject would.
            let request = try codec.decodeRequest(json)
            answering = codec.codec(answering: request)  // an older schema version's client: its own
            response = try await server.handle(request, identity: request.clientID.map { SyncIdentity(user: $0) })
        } catch {
            // What HTTP would answer with 400: the client sees a failed request.
            metrics.rejected += 1
            throw TransportError("the server refused the request: \(error)")
        }
        let encoded = answering.encode(response)
        metrics.rawBytesDown += encoded.count
        let answer = gzip ? Gzip.compress(encoded) : encoded
        metrics.gzipBytesDown += answer.count
        return answer
    }

    /// Closes the server's database and opens it again from its file.
    func restart() async throws {
        guard let reopen, let old = server else { return }
        await old.close()
        server = nil
        server = try reopen()
    }

    /// Closes the server and opens its file with `open` from now on (a newer schema version:
    /// the file migrates). - Returns: What the migration changed.
    func upgrade(_ open: @escaping @Sendable () throws -> RevisionServer) async throws -> [SchemaChange] {
        guard let old = server else { throw SimulationError("only a server in this process can be upgraded") }
        await old.close()
        server = nil
        let upgraded = try open()
        (server, reopen, codec) = (upgraded, open, upgraded.wireCodec())
        return upgraded.migrations
    }

    /// Runs `body` with the in-process server; nil for a remote one.
    func withServer<T: Sendable>(_ body: (RevisionServer) async throws -> T) async rethrows -> T? {
        guard let server else { return nil }
        return try await body(server)
    }
}
