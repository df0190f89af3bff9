import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerHTTP
import Foundation
import Hummingbird
import Testing

/// Sets the identity from a test header `X-Test-Identity: user@tenant` (what a token
/// verifier would do).
struct TestIdentityMiddleware: RouterMiddleware {
    typealias Context = BasicSyncRequestContext
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let value = request.headers.first(where: { $0.name.canonicalName == "x-test-identity" })?.value {
            let parts = value.split(separator: "@", maxSplits: 1).map(String.init)
            context.syncIdentity = SyncIdentity(user: parts[0], tenant: parts.count > 1 ? parts[1] : nil)
        }
        return try await next(request, context)
    }
}

@Suite struct TenantTests {
    static let createHome = Array(#"{"maxRevision":0,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"update":[],"delete":[],"attributes":{"-1":{"name":"Home"}}}}]}"#.utf8)
    static let catchUp = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)

    @Test func eachTenant_seesOnlyItsOwnData() async throws {
        let schema = try httpTestSchema()
        let tenants = TenantDirectory { _ in try RevisionServer(.memory, schema: schema) }
        try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(
                tenants: tenants, schema: schema, configuration: .init(port: 0), logger: logger,
                middleware: { $0.add(middleware: TestIdentityMiddleware()) }, onListening: onListening)
        }) { running in
            let created = try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "ann@acme"], body: Self.createHome)
            #expect(created.status == 200)
            let acme = try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "bob@acme"], body: Self.catchUp)
            let globex = try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "eve@globex"], body: Self.catchUp)
            #expect(String(decoding: acme.body, as: UTF8.self).contains("Home"))
            #expect(try JSONValue.parse(Data(globex.body))["maxRevision"] == .integer(0))
            #expect(!String(decoding: globex.body, as: UTF8.self).contains("Home"))

            let anonymous = try await RawHTTP.exchange(port: running.port, body: Self.catchUp)
            #expect(anonymous.status == 403)
            #expect(try JSONValue.parse(Data(anonymous.body))["error"] == .string("forbidden"))
            let hostile = try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "eve@../../etc"], body: Self.catchUp)
            #expect(hostile.status == 403)
            #expect(await tenants.openTenants == ["acme", "globex"])
        }
    }

    @Test func tenantNames_areSafeInFileNames() {
        #expect(TenantDirectory.isValidName("acme-2_b"))
        for bad in ["", "-x", "a/b", "..", "a b", String(repeating: "x", count: 65), "é"] {
            #expect(!TenantDirectory.isValidName(bad), "\(bad)")
        }
    }
}
