import FieldMergeProtocol
import FieldMergeServer
import Synchronization

/// Hands requests to a ``RevisionServer`` and keeps what `GET /health` and the statistics
/// read, so that they never wait behind a long sync.
///
/// Decoding and encoding happen outside the server, on whatever task serves the connection;
/// the server (an actor on an executor of its own) answers one request at a time.
final class RevisionServerHost: Sendable {
    /// One server, or one per tenant.
    enum Source: Sendable {
        case single(RevisionServer)
        case tenants(TenantDirectory)
    }

    let source: Source
    private let published: Mutex<Int64>
    private let counters = Mutex(SyncHTTPServer.Statistics())
    /// Per tenant: the codec of its server, which also reads the older schema versions
    /// that tenant's file kept.
    private let tenantCodecs = Mutex<[String: WireCodec]>([:])

    init(_ source: Source) {
        published = Mutex(0)
        self.source = source
    }

    /// The server the request of `identity` reaches: the one server, or its tenant's.
    ///
    /// - Throws: ``ServerError/Code/forbidden`` when a multi-tenant endpoint gets a request
    ///   whose identity names no tenant.
    func server(for identity: SyncIdentity?) async throws(ServerError) -> RevisionServer {
        switch source {
        case .single(let server):
            return server
        case .tenants(let directory):
            guard let tenant = identity?.tenant else {
                throw ServerError(.forbidden, "the request's identity names no tenant")
            }
            return try await directory.server(for: tenant)
        }
    }

    /// The server the request of `identity` reaches, and the codec that reads it, found
    /// once per request: `codec` for one server (made by its server) or an identity that
    /// names no tenant (refused, ``ServerError/Code/forbidden``); otherwise the tenant's
    /// server and its codec, made once, so that each tenant answers the older schema
    /// versions its own file kept.
    ///
    /// - Throws: ``ServerError/Code/forbidden`` for a name that is no valid tenant name.
    func destination(for identity: SyncIdentity?, limits: WireLimits, default codec: WireCodec) async throws(ServerError) -> SyncDestination {
        let server = try await server(for: identity)
        guard case .tenants = source, let tenant = identity?.tenant else { return SyncDestination(server: server, codec: codec) }
        if let made = tenantCodecs.withLock({ $0[tenant] }) { return SyncDestination(server: server, codec: made) }
        let made = server.wireCodec(limits: limits)
        tenantCodecs.withLock { $0[tenant] = made }
        return SyncDestination(server: server, codec: made)
    }

    /// Reads the server's revision into what `GET /health` shows (one server only).
    func refresh() async {
        guard case .single(let server) = source else { return }
        let revision = await server.maxRevision
        published.withLock { $0 = revision }
    }

    /// Whether the endpoint serves one data set (and `GET /health` shows its revision).
    var isSingle: Bool {
        if case .single = source { return true }
        return false
    }

    /// Answers one decoded request on `server`, the one ``destination(for:limits:default:)``
    /// found for it (one storage transaction).
    ///
    /// - Throws: ``ServerError``; the server has then changed nothing.
    func handle(_ request: SyncRequest, identity: SyncIdentity?, on server: RevisionServer) async throws(ServerError) -> SyncExchange.Handled {
        let (response, before, after) = try await server.handleReporting(request, identity: identity)
        if isSingle { published.withLock { $0 = max($0, after) } }
        return SyncExchange.Handled(response: response, revisionBefore: before, revisionAfter: after)
    }

    /// Runs `body` with the server.
    func withServer<T>(_ body: (RevisionServer) async throws -> T) async rethrows -> T {
        guard case .single(let server) = source else {
            preconditionFailure("a multi-tenant endpoint has no single server: reach servers through its TenantDirectory")
        }
        let result = try await body(server)
        await refresh()
        return result
    }

    /// The server's revision after the last request, readable without waiting for the server.
    var maxRevision: Int64 { published.withLock { $0 } }

    /// The counters so far.
    var statistics: SyncHTTPServer.Statistics { counters.withLock { $0 } }

    /// Updates the counters.
    func count(_ update: (inout SyncHTTPServer.Statistics) -> Void) {
        counters.withLock { update(&$0) }
    }
}
