import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import Foundation
import Testing

/// Tenants over HTTP: `fieldmerge-server serve --tenants DIR` as a process, and the
/// endpoint's answers when the directory is full.
@Suite struct ServeTenantsTests {
    static let secretVariable = "FM_TENANT_TEST_SECRET"

    func send(_ port: Int, _ user: String, tenant: String?, _ body: [UInt8]) async throws -> RawHTTP.Response {
        try await RawHTTP.exchange(port: port, headers: bearer(try await TestTokens.token(user, tenant: tenant)), body: body)
    }

    /// `serve --tenants folder` with the schema in `schemaFile` and the test tokens' secret,
    /// and its port; nil (the failure recorded) when it does not listen.
    static func start(_ folder: String, _ schemaFile: String, _ more: [String] = []) async throws -> (ServeProcess, Int)? {
        let serve = try ServeProcess.start(
            ["serve", "--port", "0", "--tenants", folder, "--schema", schemaFile, "--jwt-secret-env", secretVariable] + more,
            environment: [secretVariable: String(decoding: TestTokens.secret, as: UTF8.self)])
        guard let port = try await serve.port() else {
            let errors = serve.errors
            try await serve.stop(SIGKILL)
            Issue.record("serve --tenants did not listen: \(errors)")
            return nil
        }
        return (serve, port)
    }

    @Test func serveTenants_keepsEachTenantInAFileOfItsOwn() async throws {
        let folder = try TenantDirectoryTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let schemaFile = folder + ".schema.json"
        try Data(SchemaDocument.encode(try httpTestSchema()).rendered().utf8).write(to: URL(fileURLWithPath: schemaFile))
        defer { try? FileManager.default.removeItem(atPath: schemaFile) }
        guard let (serve, port) = try await Self.start(folder, schemaFile, ["--tenants-max-open", "2", "--tenants-idle", "0.2"]) else { return }
        let created = try await send(port, "ann", tenant: "acme", TokenTenantTests.createList("Home", client: "a", request: "1"))
        #expect(created.status == 200)
        let acme = try await send(port, "bob", tenant: "acme", TenantTests.catchUp)
        #expect(String(decoding: acme.body, as: UTF8.self).contains("Home"))
        // A read for a tenant without a file: revision 0, and no file.
        let globex = try await send(port, "eve", tenant: "globex", TenantTests.catchUp)
        #expect(globex.status == 200)
        #expect(try JSONValue.parse(Data(globex.body))["maxRevision"] == .integer(0))
        #expect(!String(decoding: globex.body, as: UTF8.self).contains("Home"))
        #expect(try TenantDirectoryTests.files(in: folder).filter { $0.hasSuffix(".sqlite") } == ["acme.sqlite"])
        // Its first write creates it, apart from acme's.
        let globexWrite = try await send(port, "eve", tenant: "globex", TokenTenantTests.createList("Lab", client: "e", request: "1"))
        #expect(globexWrite.status == 200)
        let acmeAgain = String(decoding: try await send(port, "bob", tenant: "acme", TenantTests.catchUp).body, as: UTF8.self)
        #expect(acmeAgain.contains("Home") && !acmeAgain.contains("Lab"))

        #expect(try await send(port, "zed", tenant: nil, TenantTests.catchUp).status == 403)
        #expect(try await RawHTTP.exchange(port: port, body: TenantTests.catchUp).status == 401)
        let health = try JSONValue.parse(Data(try await RawHTTP.exchange(port: port, method: "GET", path: "/health").body))
        #expect(health["tenants"]?["maxOpen"] == .integer(2))
        #expect(health["tenants"]?["inUse"] == .integer(0))
        // Idle for 0.2 s, both files are closed.
        var open: JSONValue?
        for _ in 0..<100 where open != .integer(0) {
            try await Task.sleep(for: .milliseconds(50))
            open = try JSONValue.parse(Data(try await RawHTTP.exchange(port: port, method: "GET", path: "/health").body))["tenants"]?["open"]
        }
        #expect(open == .integer(0))
        #expect(try await serve.stop() == 0)
        #expect(try TenantDirectoryTests.files(in: folder) == ["acme.sqlite", "globex.sqlite"])
    }

    @Test func serveTenants_keepsEachTenantsAttachmentsBesideItsFile() async throws {
        let folder = try TenantDirectoryTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let schemaFile = folder + ".schema.json"
        try Data(SchemaDocument.encode(try AttachmentTestServer.schema()).rendered().utf8).write(to: URL(fileURLWithPath: schemaFile))
        defer { try? FileManager.default.removeItem(atPath: schemaFile) }
        guard let (serve, port) = try await Self.start(folder, schemaFile) else { return }
        let bytes = AttachmentTestServer.random(30_000)
        let hash = AttachmentTestServer.hash(bytes)
        let acme = bearer(try await TestTokens.token("ann", tenant: "acme"))
        let put = try await RawHTTP.exchange(port: port, method: "PUT", path: "/attachments/\(hash)", headers: acme, body: bytes)
        #expect(put.status == 201)
        let created = try await RawHTTP.exchange(port: port, headers: acme, body: TenantAttachmentTests.createPhoto(hash, size: bytes.count))
        #expect(created.status == 200 && !String(decoding: created.body, as: UTF8.self).contains("attachmentMissing"))
        let download = try await RawHTTP.exchange(port: port, method: "GET", path: "/attachments/\(hash)", headers: acme)
        #expect(download.status == 200 && download.body == bytes && download.headers["content-type"] == "image/jpeg")
        let globex = bearer(try await TestTokens.token("eve", tenant: "globex"))
        #expect(try await RawHTTP.exchange(port: port, method: "GET", path: "/attachments/\(hash)", headers: globex).status == 403)
        #expect(try await serve.stop() == 0)
        #expect(FileManager.default.fileExists(atPath: folder + "/acme.sqlite.attachments"))
        #expect(!FileManager.default.fileExists(atPath: folder + "/globex.sqlite"))
    }

    @Test func serveTenants_refusesWhatItCannotDo() async throws {
        let folder = try TenantDirectoryTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let open = try await ServeProcess.run(["serve", "--port", "0", "--tenants", folder])
        #expect(open.status == 64)
        #expect(open.errors.contains("--tenants needs token authentication"), "\(open.errors)")
        let postgres = try await ServeProcess.run(
            ["serve", "--tenants", folder, "--postgres", "postgres://u:p@127.0.0.1:1/db", "--jwt-secret-env", Self.secretVariable])
        #expect(postgres.status == 64)
        #expect(postgres.errors.contains("a PostgreSQL schema per tenant is not supported"), "\(postgres.errors)")
        let both = try await ServeProcess.run(["serve", "--tenants", folder, "--db", folder + "/x.sqlite", "--jwt-secret-env", Self.secretVariable])
        #expect(both.status == 64)
        #expect(try TenantDirectoryTests.files(in: folder).isEmpty)
        for arguments in [["--db", folder + "/p.sqlite", "--postgres-pool", "8"], ["--db", folder + "/p.sqlite", "--postgres-statement-timeout", "5"],
                          ["--postgres", "postgres://u:p@127.0.0.1:1/db", "--postgres-pool", "0"],
                          ["--postgres", "postgres://u:p@127.0.0.1:1/db", "--postgres-statement-timeout", "-1"],
                          ["--db", folder + "/p.sqlite", "--postgres-write-group", "8"],
                          ["--postgres", "postgres://u:p@127.0.0.1:1/db", "--postgres-write-group", "0"]] {
            let refused = try await ServeProcess.run(["serve"] + arguments)
            #expect(refused.status == 64, "\(arguments)")
            #expect(refused.errors.contains("--postgres-"), "\(refused.errors)")
        }
        let retention = try await ServeProcess.run(["serve", "--db", folder + "/r.sqlite", "--reply-retention-days", "0"])
        #expect(retention.status == 64)
        #expect(retention.errors.contains("--reply-retention-days must be above 0"), "\(retention.errors)")
        let perUser = try await ServeProcess.run(["serve", "--db", folder + "/r.sqlite", "--replies-per-user", "0"])
        #expect(perUser.status == 64)
        #expect(perUser.errors.contains("--replies-per-user must be at least 1"), "\(perUser.errors)")
        #expect(try TenantDirectoryTests.files(in: folder).isEmpty)
    }

    /// Every open tenant held by a request: another tenant's request is answered 503
    /// `unavailable` (retryable), and `GET /health` shows the directory full.
    @Test func aFullDirectory_answers503() async throws {
        let folder = try TenantDirectoryTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let schema = try httpTestSchema()
        let tenants = TenantDirectory.sqliteFiles(in: folder, schema: schema, limits: .init(maxOpen: 1, idleTime: nil))
        let verifier = try await TestTokens.verifier()
        try await withTenantServer(tenants, schema: schema, verifier: verifier) { running in
            let held = try await tenants.lease("acme")
            let refused = try await send(running.port, "eve", tenant: "globex", TokenTenantTests.createList("Lab", client: "e", request: "1"))
            #expect(refused.status == 503)
            #expect(try JSONValue.parse(Data(refused.body))["error"] == .string("unavailable"))
            let health = try JSONValue.parse(Data(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/health").body))
            #expect(health["tenants"] == .object(["open": .integer(1), "inUse": .integer(1), "maxOpen": .integer(1)]))
            // The held tenant still answers its own requests.
            #expect(try await send(running.port, "ann", tenant: "acme", TenantTests.catchUp).status == 200)
            await held.release()
            let accepted = try await send(running.port, "eve", tenant: "globex", TokenTenantTests.createList("Lab", client: "e", request: "1"))
            #expect(accepted.status == 200)
            #expect(await tenants.openTenants == ["globex"])
        }
    }
}
