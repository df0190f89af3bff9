import FieldMergeServer
import FieldMergeProtocol
import Hummingbird
import Logging

/// Routes requests: `POST /sync`, `GET /health`, and 404/405 for everything else.
struct SyncResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let host: RevisionServerHost
    let codec: WireCodec
    let configuration: SyncHTTPServer.Configuration

    func respond(to request: Request, context: Context) async throws -> Response {
        switch request.uri.path {
        case "/sync":
            guard request.method == .post else { return methodNotAllowed(allow: "POST") }
            return try await sync(request, context: context)
        case "/health":
            guard request.method == .get || request.method == .head else { return methodNotAllowed(allow: "GET, HEAD") }
            return health(head: request.method == .head)
        default:
            return errorResponse(.notFound, WireErrorBody(error: "notFound", message: "no endpoint at \(request.uri.path)"))
        }
    }

    /// `{"status":"ok","maxRevision":N}`.
    private func health(head: Bool) -> Response {
        let json = Array("{\"status\":\"ok\",\"maxRevision\":\(host.maxRevision)}".utf8)
        var response = Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
        if head { response = response.createHeadResponse() }
        return response
    }

    private func methodNotAllowed(allow: String) -> Response {
        var response = errorResponse(.methodNotAllowed, WireErrorBody(error: "methodNotAllowed", message: "allowed: \(allow)"))
        response.headers[.allow] = allow
        return response
    }

    /// A JSON error body, never gzip'd.
    func errorResponse(_ status: HTTPResponse.Status, _ body: WireErrorBody) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: codec.encode(body))))
    }
}
