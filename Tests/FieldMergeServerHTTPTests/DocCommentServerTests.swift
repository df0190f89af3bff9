import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeSQLite
import Foundation
import Hummingbird
import Testing

typealias MyContext = BasicSyncRequestContext

/// Stands for an app's own authentication in the `SyncEndpoint` snippet: everyone is "me".
struct MyTokenAuthenticator: RouterMiddleware {
    typealias Context = MyContext
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.syncIdentity = SyncIdentity(user: "me")
        return try await next(request, context)
    }
}

/// The snippets of the `///` comments on `TenantDirectory`, `SyncHTTPServer`, `SyncEndpoint`
/// and `BearerAuthenticator`, between `// <file> block begin` and `… end`
/// (``DocSnippets/docComments`` checks that they are the comments' code, line for line).
/// The ones that serve on port 8080 until a signal are compiled, not run
/// (`ShutdownSignalTests` runs that path on a free port).
@Suite struct DocCommentServerTests {
    @Test func tenantDirectorySnippet_refusesAnInvalidTenantBeforeOpening() async throws {
        let schema = try httpTestSchema()
        // TenantDirectory.swift block begin
        let tenants = TenantDirectory(limits: .init(maxOpen: 64, idleTime: .seconds(60))) { tenant, access in
            let path = "/var/lib/app/\(tenant).sqlite"
            guard access == .create || FileManager.default.fileExists(atPath: path) else { return nil }
            return try RevisionServer(.file(path: path), schema: schema)
        } empty: {
            try RevisionServer(.memory, schema: schema)
        }
        // TenantDirectory.swift block end
        await #expect(throws: ServerError.self) { _ = try await tenants.server(for: "../escape") }
    }

    /// Compiled only: these serve on port 8080 until SIGTERM or SIGINT.
    static func serveUntilSignal(schema: Schema) async throws {
        do {
            // SyncHTTPServer.swift block begin
            let server = SyncHTTPServer(server: try RevisionServer(.file(path: "server.sqlite"), schema: schema),
                                        configuration: .init(port: 8080))
            try await server.runUntilShutdownSignal()   // SIGTERM or SIGINT: requests in flight finish
            // SyncHTTPServer.swift block end
        }
        do {
            // SyncHTTPServer+Shutdown.swift block begin
            let http = SyncHTTPServer(server: try RevisionServer(.file(path: "server.sqlite"), schema: schema),
                                      configuration: .init(host: "0.0.0.0", port: 8080))
            try await http.runUntilShutdownSignal()
            // SyncHTTPServer+Shutdown.swift block end
        }
    }

    @Test func syncEndpointSnippet_buildsAnApplication() throws {
        let server = try RevisionServer(.memory, schema: try httpTestSchema())
        // SyncEndpoint.swift block begin
        let router = Router(context: MyContext.self)        // MyContext: SyncRequestContext
        router.add(middleware: MyTokenAuthenticator())     // sets context.syncIdentity
        SyncEndpoint(server: server).addRoutes(to: router)
        let app = Application(router: router, configuration: .init(address: .hostname("0.0.0.0", port: 8080)))
        // SyncEndpoint.swift block end
        #expect(app.configuration.address == .hostname("0.0.0.0", port: 8080))
    }

    @Test func bearerAuthenticatorSnippet_verifiesTheTokensOfItsSecret() async throws {
        let server = try RevisionServer(.memory, schema: try httpTestSchema())
        let secret = String(decoding: TestTokens.secret, as: UTF8.self)
        // BearerAuthenticator.swift block begin
        let verifier = try await TokenVerifier.hmac(secret: Array(secret.utf8))
        let http = SyncHTTPServer(server: server, middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) })
        // BearerAuthenticator.swift block end
        withExtendedLifetime(http) {}
        #expect(try await verifier.identity(of: try await TestTokens.token("ada")).user == "ada")
    }
}
