import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeSync
import Testing

/// `GET /sync/events` of a server with scopes (Specs/live.md §3): a device that says
/// `pages=scoped` gets the changes of its scope as pages, one that does not gets pokes.
@Suite struct LiveScopedEndpointTests {
    static let schema = try! Schema([
        Entity("projects", fields: [Field("name", .text)]),
        Entity("memberships", fields: [Field("userID", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))]),
        Entity("tasks", fields: [Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))]),
    ])

    @Test func aDeviceThatSaysScopedPagesGetsPagesAndAnotherPokes() async throws {
        var options = RevisionServer.Options()
        options.scopes = ScopeRules([SyncScope(
            "project", root: "projects", members: ["memberships": "projectID", "tasks": "projectID"],
            grants: [
                .through(entity: "memberships", reference: "projectID", where: [SyncScope.Condition("userID", .claim("sub"))]),
                .roles(["admin"]),
            ])])
        let server = try RevisionServer(.memory, schema: Self.schema, options: options)
        // The admin writes in process; ann's devices listen over HTTP.
        let admin = SyncClient(
            store: try Store(.memory, schema: Self.schema, replica: ReplicaID(1)),
            transport: InProcessTransport(server: server, identity: SyncIdentity(user: "root", roles: ["admin"])))
        try await admin.write { store in
            let one = try store.insert("projects", values: [.text("One")])
            _ = try store.insert("memberships", values: [.text("ann"), .integer(one)])
        }
        _ = try await admin.sync()
        try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(
                server: server, configuration: .init(port: 0), logger: logger,
                middleware: { $0.add(middleware: TestIdentityMiddleware()) }, onListening: onListening)
        }) { running in
            let request = { (pages: String) in
                "GET /sync/events?schema=\(Self.schema.fingerprint)\(pages) HTTP/1.1\r\nHost: t\r\nX-Test-Identity: ann\r\n\r\n"
            }
            let checking = try await RawConnection.open(port: running.port, sending: request("&pages=scoped"))
            let plain = try await RawConnection.open(port: running.port, sending: request(""))
            #expect(await LiveEndpointTests.read(checking, until: "event: ready\nid: 1\n"))
            #expect(await LiveEndpointTests.read(plain, until: "event: ready\nid: 1\n"))
            #expect(try await LiveWait.eventually { server.live.subscribers == 2 && server.live.isIdle })
            try await admin.write { _ = try $0.insert("tasks", values: [.text("Ship it"), .integer(1)]) }
            _ = try await admin.sync()
            #expect(await LiveEndpointTests.read(checking, until: "event: changes\nid: 2\ndata: 1\n"))
            let page = String(decoding: checking.received, as: UTF8.self)
            #expect(page.contains("Ship it") && page.contains(#""scopes":{"project":[1]}"#))
            #expect(await LiveEndpointTests.read(plain, until: "event: poke\nid: 2\n"))
            #expect(!String(decoding: plain.received, as: UTF8.self).contains("Ship it"))
            checking.close()
            plain.close()
        }
    }
}
