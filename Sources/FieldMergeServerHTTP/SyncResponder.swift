import FieldMergeServer
import FieldMergeProtocol
import Hummingbird
import Logging

/// The endpoint's routes: `POST /sync`, `GET /sync/events` and `GET /sync/poll` (live sync),
/// `GET`/`HEAD /health` and, with metrics, `GET /metrics`, with a console, `GET /console`
/// and `GET /console/api/overview`, with attachments, `PUT`/`HEAD`/`GET /attachments/<sha256>`
/// (Specs/attachments.md), with 405 for the other
/// methods on them and a JSON 404 everywhere else.
struct SyncResponder: Sendable {
    let host: RevisionServerHost
    let codec: WireCodec
    let configuration: SyncHTTPServer.Configuration
    /// The server's exchange, under this endpoint's limits: a gzip'd body inflates to no more
    /// than a plain one may be (so a small bomb costs no more memory than a large body).
    let exchange: SyncExchange
    /// The entity names metrics may carry as labels (the schema's).
    let entities: Set<String>
    /// What the operator's console shows beyond the storage's numbers; nil without a console.
    let consoleTracker: ConsoleTracker?

    init(host: RevisionServerHost, codec: WireCodec, configuration: SyncHTTPServer.Configuration) {
        self.host = host
        self.codec = codec
        self.configuration = configuration
        exchange = SyncExchange(
            inflateLimit: min(configuration.maxRequestBytes, configuration.limits.maxBytes, configuration.limits.maxDecompressedBytes),
            gzipLevel: configuration.gzipLevel, probe: configuration.metrics?.probe)
        entities = configuration.metrics?.entities ?? configuration.console.map { _ in Set(codec.schema.entities.map(\.name)) } ?? []
        consoleTracker = configuration.console == nil ? nil : ConsoleTracker()
    }

    private static let otherMethods: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .patch, .options]

    /// Adds the routes to `router`; middleware added to it before or after applies to them.
    func addRoutes<Context: SyncRequestContext>(to router: Router<Context>) {
        router.add(middleware: NotFoundAsJSON(responder: self))
        for method in Self.otherMethods {
            router.on("/sync", method: method) { request, context in
                // The router forgives a trailing slash; the endpoint's paths are exact.
                guard request.uri.path == "/sync" else { return notFound(request) }
                guard request.method == .post else { return methodNotAllowed(allow: "POST") }
                return try await sync(request, context: context)
            }
            router.on("/sync/events", method: method) { request, context in
                guard request.uri.path == "/sync/events" else { return notFound(request) }
                guard request.method == .get else { return methodNotAllowed(allow: "GET") }
                return try await events(request, context: context)
            }
            router.on("/sync/poll", method: method) { request, context in
                guard request.uri.path == "/sync/poll" else { return notFound(request) }
                guard request.method == .get else { return methodNotAllowed(allow: "GET") }
                return try await poll(request, context: context)
            }
            router.on("/metrics", method: method) { request, context in
                guard request.uri.path == "/metrics", configuration.metrics != nil else { return notFound(request) }
                guard request.method == .get else { return methodNotAllowed(allow: "GET") }
                return metrics(request, context: context)
            }
            router.on("/attachments/**", method: method) { request, context in
                try await attachment(request, context: context)
            }
            router.on("/health", method: method) { request, _ in
                guard request.uri.path == "/health" else { return notFound(request) }
                guard request.method == .get || request.method == .head else { return methodNotAllowed(allow: "GET, HEAD") }
                return health(head: request.method == .head)
            }
        }
        addConsoleRoutes(to: router, methods: Self.otherMethods)
    }

    /// `{"status":"ok","maxRevision":N}`; for a multi-tenant endpoint the tenants' servers
    /// instead: `{"status":"ok","tenants":{"open":N,"inUse":N,"maxOpen":N}}` (`maxOpen`
    /// only when bounded). Read without waiting for a sync or the tenant directory.
    func health(head: Bool) -> Response {
        let text: String
        switch host.source {
        case .single: text = "{\"status\":\"ok\",\"maxRevision\":\(host.maxRevision)}"
        case .tenants(let directory):
            let now = directory.statistics
            let bound = directory.limits.maxOpen == .max ? "" : ",\"maxOpen\":\(directory.limits.maxOpen)"
            text = "{\"status\":\"ok\",\"tenants\":{\"open\":\(now.open),\"inUse\":\(now.inUse)\(bound)}}"
        }
        let json = Array(text.utf8)
        var response = Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
        if head { response = response.createHeadResponse() }
        return response
    }

    func methodNotAllowed(allow: String) -> Response {
        var response = errorResponse(.methodNotAllowed, WireErrorBody(error: "methodNotAllowed", message: "allowed: \(allow)"))
        response.headers[.allow] = allow
        return response
    }

    func notFound(_ request: Request) -> Response {
        errorResponse(.notFound, WireErrorBody(error: "notFound", message: "no endpoint at \(request.uri.path)"))
    }

    /// A JSON error body, never gzip'd.
    func errorResponse(_ status: HTTPResponse.Status, _ body: WireErrorBody) -> Response {
        Response.syncError(status, body)
    }
}

/// Answers a request no route takes with the endpoint's JSON 404.
struct NotFoundAsJSON<Context: RequestContext>: RouterMiddleware {
    let responder: SyncResponder

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return responder.notFound(request)
        }
    }
}
