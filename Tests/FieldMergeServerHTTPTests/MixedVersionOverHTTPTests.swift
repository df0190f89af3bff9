import FieldMerge
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation
import Testing

/// A device on schema version 1 and one on version 2 sync through a real HTTP server whose
/// file moved to version 2 (Specs/schema.md, "Mixed-version fleets").
@Suite struct MixedVersionOverHTTPTests {
    @Test func anOldAndANewDevice_shareOneServer_overHTTP() async throws {
        let v1 = try httpTestSchema()
        var entities = v1.entities
        entities[1].fields.append(Field("priority", .integer, default: .integer(3)))
        entities.append(Entity("labels", fields: [Field("name", .text)]))
        let v2 = try Schema(entities, version: 2)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-mixed-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let serverFile = folder.appendingPathComponent("server.sqlite").path
        _ = try RevisionServer(.file(path: serverFile), schema: v1)  // made by version 1
        let server = try RevisionServer(.file(path: serverFile), schema: v2)
        #expect(server.olderSchemas.map(\.schema.version) == [1])

        try await withHTTPServer(server) { running in
            let transport = HTTPTransport(url: running.syncURL)
            let old = SyncClient(store: try Store(.memory, schema: v1, replica: ReplicaID(1)), transport: transport, gzip: true)
            let new = SyncClient(store: try Store(.memory, schema: v2, replica: ReplicaID(2)), transport: transport, gzip: true)
            try await new.write { store in
                let list = try store.insert("lists", values: [.text("Home")])
                _ = try store.insert("tasks", values: [.text("Milk"), .bool(false), .integer(0), .integer(list), .integer(9)])
                _ = try store.insert("labels", values: [.text("urgent")])
            }
            _ = try await new.sync()
            _ = try await old.sync()
            #expect(try await old.read { try $0.record("tasks", id: 1)?.values } == [.text("Milk"), .bool(false), .integer(0), .integer(1)])
            try await old.write { store in _ = try store.update("tasks", id: 1, ["done": .bool(true)]) }
            _ = try await old.sync()
            _ = try await new.sync()
            #expect(try await new.read { try $0.record("tasks", id: 1)?.values }
                == [.text("Milk"), .bool(true), .integer(0), .integer(1), .integer(9)])
        }
    }
}
