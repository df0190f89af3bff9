import FieldMerge
import FieldMergeServer
import FieldMergeProtocol
import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle

/// `POST /sync` of the revision protocol over HTTP/1.1, for one `RevisionServer`.
///
/// ```swift
/// let server = SyncHTTPServer(server: try RevisionServer(.file(path: "server.sqlite"), schema: schema),
///                             configuration: .init(port: 8080))
/// try await server.runUntilShutdownSignal()   // SIGTERM or SIGINT: requests in flight finish
/// ```
///
/// The endpoint's behaviour is normative in `Specs/http.md`: gzip both ways, 413 past the
/// size limits, 400 with `{"error": …, "message": …}` for a body that cannot be read or a
/// request the server refuses (and then nothing has changed), 404/405 elsewhere, and
/// `GET /health`. Slow or idle clients are cut by the configuration's timeouts, and at most
/// ``Configuration/maxConnections`` connections are open at once (the one waiting longest
/// for its request makes room for a new one). Requests are decoded and encoded concurrently; the server itself sees
/// one request at a time, each one storage transaction. A graceful shutdown stops
/// accepting connections and lets requests in flight finish.
///
/// ``runUntilShutdownSignal()`` is all an app needs. The server is also a `Service`
/// (swift-service-lifecycle): run it in a `ServiceGroup` of your own beside other services,
/// or call ``run()``, which serves until its task is cancelled.
public struct SyncHTTPServer: Service {
    public let configuration: Configuration
    private let endpoint: SyncEndpoint
    /// The logger of the server and of each request.
    public let logger: Logger
    private let middleware: @Sendable (Router<BasicSyncRequestContext>) -> Void
    private let onListening: @Sendable (_ host: String, _ port: Int) async -> Void

    /// - Parameters:
    ///   - server: The server to serve (reach it with ``withServer(_:)``).
    ///   - configuration: Address, limits, gzip level.
    ///   - logger: Where each sync is logged (`info`) and refused requests (`notice`).
    ///   - middleware: Adds middleware to the router before the sync routes (authentication
    ///     that sets ``BasicSyncRequestContext/syncIdentity``, metrics, tracing).
    ///   - onListening: Called once the socket is bound, with the address and the actual
    ///     port (useful with port 0).
    public init(
        server: RevisionServer, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "fieldmerge.http"),
        middleware: @escaping @Sendable (Router<BasicSyncRequestContext>) -> Void = { _ in },
        onListening: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
    ) {
        self.init(
            endpoint: SyncEndpoint(server: server, configuration: configuration), configuration: configuration, logger: logger,
            middleware: middleware, onListening: onListening)
    }

    /// A server for many data sets, one per tenant (see ``SyncEndpoint/init(tenants:schema:configuration:)``);
    /// `middleware` must authenticate requests and set an identity that names the tenant.
    public init(
        tenants: TenantDirectory, schema: Schema, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "fieldmerge.http"),
        middleware: @escaping @Sendable (Router<BasicSyncRequestContext>) -> Void,
        onListening: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
    ) {
        self.init(
            endpoint: SyncEndpoint(tenants: tenants, schema: schema, configuration: configuration), configuration: configuration,
            logger: logger, middleware: middleware, onListening: onListening)
    }

    private init(
        endpoint: SyncEndpoint, configuration: Configuration, logger: Logger,
        middleware: @escaping @Sendable (Router<BasicSyncRequestContext>) -> Void,
        onListening: @escaping @Sendable (_ host: String, _ port: Int) async -> Void
    ) {
        self.configuration = configuration
        self.endpoint = endpoint
        self.logger = logger
        self.middleware = middleware
        self.onListening = onListening
    }

    /// Serves until the task is cancelled or a graceful shutdown is triggered.
    ///
    /// - Throws: When the address cannot be bound (port in use, no such address).
    public func run() async throws {
        let configuration = configuration
        let onListening = onListening
        await endpoint.host.refresh()
        let router = Router(context: BasicSyncRequestContext.self)
        middleware(router)
        endpoint.addRoutes(to: router)
        let registry = ConnectionRegistry(limit: configuration.maxConnections)
        let timeouts = configuration.connectionTimeouts
        let application = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                GuardedHTTP1Channel(responder: responder, timeouts: timeouts, registry: registry)
            },
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in
                await onListening(configuration.host, channel.localAddress?.port ?? configuration.port)
            },
            logger: logger
        )
        try await application.run()
    }

    /// Runs `body` with the server (to inspect or seed it).
    public func withServer<T>(_ body: (RevisionServer) async throws -> T) async rethrows -> T {
        try await endpoint.host.withServer(body)
    }

    /// The server's revision after the last request (read without waiting for a sync).
    public var maxRevision: Int64 { endpoint.host.maxRevision }

    /// Requests served so far, by outcome.
    public var statistics: Statistics { endpoint.host.statistics }
}
