import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Hummingbird

/// The sync endpoint's routes for a router of your own: mount `POST /sync` and
/// `GET /health` beside your app's routes, behind your middleware.
///
/// ```swift
/// let router = Router(context: MyContext.self)        // MyContext: SyncRequestContext
/// router.add(middleware: MyTokenAuthenticator())     // sets context.syncIdentity
/// SyncEndpoint(server: server).addRoutes(to: router)
/// let app = Application(router: router, configuration: .init(address: .hostname("0.0.0.0", port: 8080)))
/// ```
///
/// ``SyncHTTPServer`` is this endpoint in an application of its own, which is what
/// `fieldmerge serve` runs.
public struct SyncEndpoint: Sendable {
    let host: RevisionServerHost
    private let responder: SyncResponder

    /// An endpoint for `server`, with the limits and gzip level of `configuration` (its
    /// address is not used here).
    public init(server: RevisionServer, configuration: SyncHTTPServer.Configuration = SyncHTTPServer.Configuration()) {
        self.init(.single(server), codec: server.wireCodec(limits: configuration.limits), configuration: configuration)
    }

    /// An endpoint for many data sets, one per tenant: each request goes to the server of the
    /// tenant its identity names (`SyncIdentity/tenant`, set by authentication middleware);
    /// one that names none is answered 403. Every tenant's server uses `schema`; each also
    /// answers the older schema versions its own file was migrated from
    /// (`RevisionServer.olderSchemas`).
    public init(
        tenants: TenantDirectory, schema: Schema, configuration: SyncHTTPServer.Configuration = SyncHTTPServer.Configuration()
    ) {
        self.init(.tenants(tenants), codec: WireCodec(schema: schema, limits: configuration.limits), configuration: configuration)
    }

    private init(_ source: RevisionServerHost.Source, codec: WireCodec, configuration: SyncHTTPServer.Configuration) {
        host = RevisionServerHost(source)
        responder = SyncResponder(host: host, codec: codec, configuration: configuration)
    }

    /// Adds `POST /sync` and `GET`/`HEAD /health` to `router` (405 for other methods on those
    /// paths, a JSON 404 for paths no route takes). Middleware added to the router applies.
    public func addRoutes<Context: SyncRequestContext>(to router: Router<Context>) {
        responder.addRoutes(to: router)
    }

    /// The server's revision after the last request (read without waiting for a sync).
    public var maxRevision: Int64 { host.maxRevision }

    /// Requests served so far, by outcome.
    public var statistics: SyncHTTPServer.Statistics { host.statistics }
}
