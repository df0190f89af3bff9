import FieldMergeProtocol
import Foundation
import FieldMergeServerHTTP
import Hummingbird

/// Middleware that requires `Authorization: Bearer <jwt>` on every request but `/health`
/// and the console's static files (`/console`, its script and style),
/// verifies the token with a ``TokenVerifier`` and sets the context's
/// `SyncRequestContext/syncIdentity` from its claims.
///
/// A missing, malformed, badly signed or expired token is answered 401 with
/// `WWW-Authenticate: Bearer` and `{"error": "unauthenticated", "message": …}`; the request
/// never reaches the server, so nothing is written.
///
/// ```swift
/// let verifier = try await TokenVerifier.hmac(secret: Array(secret.utf8))
/// let http = SyncHTTPServer(server: server, middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) })
/// ```
public struct BearerAuthenticator<Context: SyncRequestContext>: RouterMiddleware {
    public let verifier: TokenVerifier

    public init(verifier: TokenVerifier) { self.verifier = verifier }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Load balancers probe /health without credentials; it shows no data.
        if request.uri.path == "/health" { return try await next(request, context) }
        // The console's page, script and style hold no data, and a browser opening the page
        // cannot send a token: its overview (`/console/api/overview`) needs one.
        if SyncConsole.isStaticPath(request.uri.path) { return try await next(request, context) }
        var context = context
        do throws(AuthenticationFailure) {
            context.syncIdentity = try await verifier.identity(of: try Self.token(in: request.headers[.authorization]))
        } catch {
            context.logger.notice("sync refused", metadata: [
                "status": "401", "error": "unauthenticated", "message": .string(error.message),
            ])
            var response = Response.syncError(.unauthorized, WireErrorBody(error: "unauthenticated", message: error.message))
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        return try await next(request, context)
    }

    /// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
    static func token(in header: String?) throws(AuthenticationFailure) -> String {
        guard let header else { throw AuthenticationFailure("the request has no 'Authorization: Bearer <token>' header") }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw AuthenticationFailure("the Authorization header is not 'Bearer <token>'")
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else { throw AuthenticationFailure("the Authorization header carries an empty token") }
        return token
    }
}
