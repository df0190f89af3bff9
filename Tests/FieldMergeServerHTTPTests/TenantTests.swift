import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
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

    /// A tenant whose file was migrated from version 1 answers a version-1 client in its
    /// own schema; a tenant that never had version 1 refuses it (Specs/schema.md,
    /// "Mixed-version fleets").
    @Test func eachTenant_answersTheOlderVersionsItsFileKept() async throws {
        let folder = NSTemporaryDirectory() + "fm-tenant-versions-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let v1 = try httpTestSchema()
        var entities = v1.entities
        entities[0].fields.append(Field("color", .text, default: .text("blue")))
        let v2 = try Schema(entities, version: 2)
        _ = try RevisionServer(.file(path: folder + "/acme.sqlite"), schema: v1)
        let tenants = TenantDirectory { tenant in try RevisionServer(.file(path: folder + "/\(tenant).sqlite"), schema: v2) }
        let body = Array(("{\"schemaVersion\":1,\"schemaFingerprint\":\"\(v1.fingerprint)\","
            + #""maxRevision":0,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"attributes":{"-1":{"name":"Home"}}}}]}"#).utf8)
        try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(
                tenants: tenants, schema: v2, configuration: .init(port: 0), logger: logger,
                middleware: { $0.add(middleware: TestIdentityMiddleware()) }, onListening: onListening)
        }) { running in
            let acme = try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "ann@acme"], body: body)
            #expect(acme.status == 200)
            let answer = String(decoding: acme.body, as: UTF8.self)
            #expect(answer.contains("Home") && !answer.contains("color"))
            let server = try await tenants.server(for: "acme")
            #expect(try await server.withSQLite { try $0.scalar("SELECT color FROM lists WHERE name = 'Home'") } == .text("blue"))
            let globex = try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "eve@globex"], body: body)
            #expect(globex.status == 409)
            #expect(try JSONValue.parse(Data(globex.body))["error"] == .string("incompatibleSchema"))
        }
    }

    @Test func tenantNames_areSafeInFileNames() {
        #expect(TenantDirectory.isValidName("acme-2_b"))
        for bad in ["", "-x", "a/b", "..", "a b", String(repeating: "x", count: 65), "é"] {
            #expect(!TenantDirectory.isValidName(bad), "\(bad)")
        }
    }
}
