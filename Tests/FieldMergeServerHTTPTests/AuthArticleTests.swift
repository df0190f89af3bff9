import FieldMerge
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation
import Synchronization
import Testing

/// The FieldMergeServerAuth catalog's snippet (between `// FieldMergeServerAuth.md block
/// begin` and `… end`, checked by ``DocSnippets``), served: tokens are required and the
/// policy's write rules hold.
@Suite struct AuthArticleTests {
    @Test func docSnippet_requiresTokens_andEnforcesThePolicy() async throws {
        let schema = try httpTestSchema()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-auth-doc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let databasePath = folder.appendingPathComponent("server.sqlite").path
        let secretPath = folder.appendingPathComponent("secret").path
        try Data(TestTokens.secret).write(to: URL(fileURLWithPath: secretPath))
        let policyJSON = Data(#"{"entities": {"lists": {"write": ["editor"]}}, "default": {"write": ["*"]}}"#.utf8)
        let port = try ShutdownSignalTests.freePort()

        // FieldMergeServerAuth.md block begin
        let policy = try AccessPolicy.decode(policyJSON, schema: schema)
        var options = RevisionServer.Options()
        options.enforce(policy)                                  // write rules, read rules, scopes
        let verifier = try await TokenKeySource.secretFile(secretPath).verifier(
            requirements: .init(customClaims: policy.scopes?.claims ?? []))
        let server = try RevisionServer(.file(path: databasePath), schema: schema, options: options)
        let http = SyncHTTPServer(
            server: server, configuration: .init(port: port),
            middleware: { router in router.add(middleware: BearerAuthenticator(verifier: verifier)) })
        // FieldMergeServerAuth.md block end

        let stopped = Mutex(false)
        let serving = Task {
            defer { stopped.withLock { $0 = true } }
            try await http.run()
        }
        defer { serving.cancel() }
        try await ShutdownSignalTests.waitUntilHealthy(port: port, unless: { stopped.withLock { $0 } })
        let url = URL(string: "http://127.0.0.1:\(port)/sync")!
        func client(_ token: String?, _ replica: UInt64) throws -> SyncClient {
            SyncClient(
                store: try Store(.memory, schema: schema, replica: ReplicaID(replica)),
                transport: HTTPTransport(url: url, token: token.map { token in { @Sendable _ in token } }))
        }
        // No token: refused before anything is read.
        let anonymous = try client(nil, 1)
        await #expect(throws: SyncError.self) { try await anonymous.sync() }
        // A viewer's list is refused alone; an editor's is taken.
        let viewer = try client(try await TestTokens.token("vi", roles: ["viewer"]), 2)
        try await viewer.write { _ = try $0.insert("lists", values: ["Mine"]) }
        #expect(try await viewer.sync().refused.map(\.code) == ["unauthorized"])
        let editor = try client(try await TestTokens.token("ed", roles: ["editor"]), 3)
        try await editor.write { _ = try $0.insert("lists", values: ["Team"]) }
        #expect(try await editor.sync().sent == 1)
        #expect(try await editor.read { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(1))
    }
}
