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

    /// The server the request of `identity` reaches, and the codec that reads it, found
    /// once per request: `codec` for one server; otherwise the tenant's server, held for the
    /// request (``SyncDestination/lease``, released by the exchange), and its codec, made
    /// once, so that each tenant answers the older schema versions its own file kept. A
    /// tenant without a data set is not created here: the request goes to the directory's
    /// empty server with `codec`, and ``handle(_:identity:at:)`` creates the data set only
    /// for a request that writes.
    ///
    /// - Throws: ``ServerError/Code/forbidden`` when the identity names no tenant or no valid
    ///   tenant name; ``ServerError/Code/unavailable`` when every open tenant is in use.
    func destination(for identity: SyncIdentity?, limits: WireLimits, default codec: WireCodec) async throws(ServerError) -> SyncDestination {
        let directory: TenantDirectory
        switch source {
        case .single(let server): return SyncDestination(server: server, codec: codec)
        case .tenants(let tenants): directory = tenants
        }
        guard let tenant = identity?.tenant else {
            throw ServerError(.forbidden, "the request's identity names no tenant")
        }
        let lease = try await directory.lease(tenant, .existing)
        guard lease.exists else { return SyncDestination(server: lease.server, codec: codec, lease: lease) }
        let made = tenantCodecs.withLock { codecs in
            if let made = codecs[tenant] { return made }
            // Bounded: a process that served many tenants starts the cache again.
            if codecs.count >= Self.codecCacheLimit { codecs.removeAll() }
            let made = lease.server.wireCodec(limits: limits)
            codecs[tenant] = made
            return made
        }
        return SyncDestination(server: lease.server, codec: made, lease: lease)
    }

    /// The most tenants' codecs kept at once.
    static let codecCacheLimit = 1_024

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

    /// Answers one decoded request at `destination`, the one
    /// ``destination(for:limits:default:)`` found for it (one storage transaction). A
    /// request that writes for a tenant without a data set creates it (and holds it while
    /// it is answered).
    ///
    /// - Throws: ``ServerError``; the server has then changed nothing.
    func handle(_ request: SyncRequest, identity: SyncIdentity?, at destination: SyncDestination) async throws(ServerError) -> SyncExchange.Handled {
        guard let absent = destination.lease, !absent.exists, !request.changeSets.isEmpty, case .tenants(let directory) = source else {
            return try await handle(request, identity: identity, on: destination.server)
        }
        let created = try await directory.lease(absent.tenant, .create)
        do {
            let handled = try await handle(request, identity: identity, on: created.server)
            await created.release()
            return handled
        } catch {
            await created.release()
            throw error
        }
    }

    private func handle(_ request: SyncRequest, identity: SyncIdentity?, on server: RevisionServer) async throws(ServerError) -> SyncExchange.Handled {
        let handled = try await server.handleReporting(request, identity: identity)
        if isSingle { published.withLock { $0 = max($0, handled.revisionAfter) } }
        return handled
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
