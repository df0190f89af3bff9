import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import Testing

/// Attachments on a multi-tenant endpoint (Specs/attachments.md §4): each tenant's bytes sit
/// beside its own file, reached through the tenant its token names, and never through another's.
@Suite struct TenantAttachmentTests {
    /// A create of a photo referencing `hash` of `size` bytes as `mediaType`, as JSON.
    static func createPhoto(_ hash: String, size: Int, mediaType: String = "image/jpeg") -> [UInt8] {
        Array(#"{"maxRevision":0,"changeSets":[{"types":["photos"],"photos":{"create":[-1],"attributes":{"-1":{"caption":"c","image":"sha256:\#(hash);\#(size);\#(mediaType)"}}}}]}"#.utf8)
    }

    /// Runs `body` with a multi-tenant endpoint whose tenants keep their bytes beside their
    /// files in a fresh folder, removed after.
    static func withTenants(_ body: (RunningServer, TenantDirectory, String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tenant-attachments-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let schema = try AttachmentTestServer.schema()
        let tenants = TenantDirectory.sqliteFiles(in: folder, schema: schema, attachments: .portable)
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.attachments = SyncHTTPServer.Attachments(maxBytes: 1 << 20)
        try await withTenantServer(tenants, schema: schema, verifier: try await TestTokens.verifier(), configuration: configuration) { running in
            try await body(running, tenants, folder)
        }
        await tenants.close()
    }

    @Test func eachTenantKeepsItsOwnBytes_besideItsFile() async throws {
        try await Self.withTenants { running, _, folder in
            let acme = bearer(try await TestTokens.token("ann", tenant: "acme"))
            let globex = bearer(try await TestTokens.token("eve", tenant: "globex"))
            let bytes = AttachmentTestServer.random(70_000)
            let hash = AttachmentTestServer.hash(bytes)
            let path = "/attachments/\(hash)"

            // A tenant without a data set holds nothing, and its status creates no file.
            let before = try await RawHTTP.exchange(port: running.port, method: "HEAD", path: path, headers: acme)
            #expect(before.status == 404 && before.headers["upload-offset"] == "0")
            #expect(!FileManager.default.fileExists(atPath: folder + "/acme.sqlite"))

            // A reference before its bytes is refused for that record, as on one data set.
            let early = try await RawHTTP.exchange(port: running.port, headers: acme, body: Self.createPhoto(hash, size: bytes.count))
            #expect(early.status == 200 && String(decoding: early.body, as: UTF8.self).contains("attachmentMissing"))

            // The upload lands beside acme's file (creating its data set if needed).
            let put = try await RawHTTP.exchange(port: running.port, method: "PUT", path: path, headers: acme, body: bytes)
            #expect(put.status == 201)
            #expect(FileManager.default.fileExists(atPath: folder + "/acme.sqlite.attachments"))
            #expect(try await RawHTTP.exchange(port: running.port, method: "HEAD", path: path, headers: acme).headers["upload-complete"] == "?1")
            // Another tenant holds none of it, and may not read it.
            #expect(try await RawHTTP.exchange(port: running.port, method: "HEAD", path: path, headers: globex).status == 404)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: path, headers: globex).status == 403)

            // Referenced, the bytes come back to acme as the media type the record names.
            let created = try await RawHTTP.exchange(
                port: running.port, headers: acme, body: Self.createPhoto(hash, size: bytes.count, mediaType: "application/pdf"))
            #expect(created.status == 200 && !String(decoding: created.body, as: UTF8.self).contains("attachmentMissing"))
            let download = try await RawHTTP.exchange(port: running.port, method: "GET", path: path, headers: acme)
            #expect(download.status == 200 && download.body == bytes)
            #expect(download.headers["content-type"] == "application/pdf")
            #expect(download.headers["x-content-type-options"] == "nosniff")
            // Globex referencing the same hash without its bytes is refused: nothing is shared.
            let borrowed = try await RawHTTP.exchange(port: running.port, headers: globex, body: Self.createPhoto(hash, size: bytes.count))
            #expect(String(decoding: borrowed.body, as: UTF8.self).contains("attachmentMissing"))
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: path, headers: globex).status == 403)

            // A token without a tenant reaches no bytes.
            let none = bearer(try await TestTokens.token("zed"))
            #expect(try await RawHTTP.exchange(port: running.port, method: "PUT", path: path, headers: none, body: bytes).status == 403)
        }
    }

    @Test func eachTenantsGarbage_isCollectedByItsOwnServer() async throws {
        try await Self.withTenants { running, tenants, _ in
            let acme = bearer(try await TestTokens.token("ann", tenant: "acme"))
            let (kept, dropped) = (AttachmentTestServer.random(3_000), AttachmentTestServer.random(5_000))
            for bytes in [kept, dropped] {
                let put = try await RawHTTP.exchange(
                    port: running.port, method: "PUT", path: "/attachments/\(AttachmentTestServer.hash(bytes))", headers: acme, body: bytes)
                #expect(put.status == 201)
            }
            _ = try await RawHTTP.exchange(port: running.port, headers: acme, body: Self.createPhoto(AttachmentTestServer.hash(kept), size: kept.count))
            let report = try await tenants.withServer(for: "acme", access: .existing) { server in
                try await server.collectAttachments(unusedFor: 0)
            }
            #expect(report.removedFinished == 1)
            #expect(try await RawHTTP.exchange(
                port: running.port, method: "HEAD", path: "/attachments/\(AttachmentTestServer.hash(dropped))", headers: acme).status == 404)
            #expect(try await RawHTTP.exchange(
                port: running.port, method: "GET", path: "/attachments/\(AttachmentTestServer.hash(kept))", headers: acme).body == kept)
        }
    }
}
