import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import Testing

/// The attachment endpoints behind the same bearer tokens as `POST /sync`, and downloads
/// checked against the scopes of the token's user (Specs/attachments.md §4).
@Suite struct AttachmentAuthTests {
    static let schema = try! Schema([
        Entity("projects", fields: [Field("name", .text), Field("ownerID", .text)]),
        Entity("photos", fields: [Field("projectID", .reference(to: "projects", onDelete: .cascade)), Field("image", .attachment)]),
    ])

    @Test func tokensAreNeeded_andDownloadsFollowTheScopes() async throws {
        var options = RevisionServer.Options()
        options.scopes = ScopeRules([
            SyncScope(
                "project", root: "projects", members: ["photos": "projectID"],
                grants: [.roots(where: [SyncScope.Condition("ownerID", .claim("sub"))]), .roles(["admin"])])
        ])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attachments-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DirectoryAttachmentStore(directory: directory)
        options.attachments = store
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.attachments = SyncHTTPServer.Attachments(store: store)
        let server = try RevisionServer(.memory, schema: Self.schema, options: options)
        let verifier = try await TestTokens.verifier()
        let (ann, bob) = (try await TestTokens.token("ann"), try await TestTokens.token("bob"))
        try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(
                server: server, configuration: configuration, logger: logger,
                middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) }, onListening: onListening)
        }) { running in
            let bytes = AttachmentTestServer.random(40_000)
            let hash = AttachmentTestServer.hash(bytes)
            let path = "/attachments/\(hash)"
            for method in ["PUT", "HEAD", "GET"] {
                let anonymous = try await RawHTTP.exchange(port: running.port, method: method, path: path, body: method == "PUT" ? bytes : [])
                #expect(anonymous.status == 401, "\(method)")
            }
            #expect(try await RawHTTP.exchange(port: running.port, method: "PUT", path: path, headers: bearer(ann), body: bytes).status == 201)
            _ = try await running.http.withServer { server in
                try await server.handle(SyncRequest(maxRevision: 0, changeSets: [Send.changeSet(
                    Send.create("projects", -1, [.text("Ann's"), .text("ann")]),
                    Send.create("photos", -1, [.integer(-1), .text("sha256:\(hash);40000;image/png")]))]),
                    identity: SyncIdentity(user: "root", roles: ["admin"]))
            }
            let forAnn = try await RawHTTP.exchange(port: running.port, method: "GET", path: path, headers: bearer(ann))
            #expect(forAnn.status == 200 && forAnn.body == bytes)
            let forBob = try await RawHTTP.exchange(port: running.port, method: "GET", path: path, headers: bearer(bob))
            #expect(forBob.status == 403)
        }
    }
}
