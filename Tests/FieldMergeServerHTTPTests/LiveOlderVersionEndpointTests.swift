import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation
import Testing

/// `GET /sync/events` for a device of an older schema version the server still answers
/// (Specs/live.md §2, §3): pages in its own schema.
@Suite struct LiveOlderVersionEndpointTests {
    @Test func aDeviceOfAnOlderVersionGetsPagesInItsSchema() async throws {
        let folder = NSTemporaryDirectory() + "fm-live-older-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let v1 = try Schema([Entity("lists", fields: [Field("name", .text)])])
        let v2 = try Schema([
            Entity("boards", fields: [Field("label", .text, renamedFrom: "name"), Field("color", .integer)], renamedFrom: "lists")
        ], version: 2)
        do {
            let old = SyncClient(
                store: try Store(.memory, schema: v1, replica: ReplicaID(1)),
                transport: InProcessTransport(server: try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v1)))
            try await old.write { _ = try $0.insert("lists", values: [.text("Home")]) }
            _ = try await old.sync()
        }
        // Migrated to version 2, the server still answers version 1.
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v2)
        let writer = SyncClient(store: try Store(.memory, schema: v2, replica: ReplicaID(2)), transport: InProcessTransport(server: server))
        _ = try await writer.sync()
        try await withHTTPServer(server) { running in
            let request = { (schema: Schema) in "GET /sync/events?schema=\(schema.fingerprint) HTTP/1.1\r\nHost: t\r\n\r\n" }
            let old = try await RawConnection.open(port: running.port, sending: request(v1))
            let unknown = try await RawConnection.open(
                port: running.port, sending: request(try Schema([Entity("lists", fields: [Field("name", .integer)])])))
            #expect(await LiveEndpointTests.read(old, until: "event: ready\nid: 1\n"))
            #expect(await LiveEndpointTests.read(unknown, until: "event: ready\nid: 1\n"))
            try await writer.write { _ = try $0.update("boards", id: 1, ["label": .text("House"), "color": .integer(3)]) }
            _ = try await writer.sync()
            #expect(await LiveEndpointTests.read(old, until: "event: changes\nid: 2\ndata: 1\n"))
            let page = String(decoding: old.received, as: UTF8.self)
            #expect(page.contains(#""lists""#) && page.contains(#""name":"House""#))
            #expect(!page.contains("boards") && !page.contains("color"))
            // A version the server never had: a poke.
            #expect(await LiveEndpointTests.read(unknown, until: "event: poke\nid: 2\n"))
            old.close()
            unknown.close()
        }
    }
}
