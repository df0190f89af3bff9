import FieldMerge
import FieldMergeProtocol
import Synchronization

/// A ``RevisionServer`` in this process, behind the same bytes a network would carry.
///
/// It runs the server's ``SyncExchange``, as the HTTP endpoint does, and errors reach the
/// client as they would over HTTP (``SyncStatus``, Specs/http.md §9): a request refused as
/// it stands is a ``SyncRequestRejected`` with the status HTTP would give; a storage that
/// fails or cannot be read is a ``TransportError`` (try again later).
public final class InProcessTransport: SyncTransport {
    public let server: RevisionServer
    private let route: SingleServerRoute
    private let exchange: SyncExchange
    /// The identity every request is sent under (what a token would say over HTTP).
    public let identity: SyncIdentity?
    /// Hears the time of decoding requests and encoding answers (``SyncPhase``); the server's
    /// own phases go to its ``RevisionServer/Options/probe``.
    public let probe: (any SyncProbe)?
    /// The largest attachment an upload may have (as `serve --attachment-max-mib`): larger
    /// ones are refused with 413 `tooLarge` (``AttachmentTransport``).
    public let attachmentMaxBytes: Int64
    private let answered = Mutex(0)
    /// Requests received so far.
    public var requests: Int { answered.withLock { $0 } }

    public init(server: RevisionServer, identity: SyncIdentity? = nil, probe: (any SyncProbe)? = nil, attachmentMaxBytes: Int64 = 256 << 20) {
        self.server = server
        self.attachmentMaxBytes = attachmentMaxBytes
        self.identity = identity
        self.probe = probe
        route = SingleServerRoute(server)
        exchange = SyncExchange(probe: probe)
    }

    public func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        answered.withLock { $0 += 1 }
        let reply = await exchange.run(body, gzip: gzip, answerGzip: gzip, identity: identity, route: route)
        if let error = reply.clientError(origin: "the server in this process") { throw error }
        return reply.body
    }

    /// Runs `body` with the server (for tests and tools that inspect it).
    public func withServer<T>(_ body: (RevisionServer) async throws -> T) async rethrows -> T { try await body(server) }
}
