import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation
import Testing

/// Version 2 retires the entity `lists` and the field that references it (Specs/schema.md,
/// "Retiring an entity"): the server keeps the lists for devices still on version 1, which
/// read and write them as before; devices on version 2 never receive them.
@Suite struct RetiredEntityFleetTests {
    static func v2() throws -> Schema {
        try Schema([
            Entity("lists", fields: [Field("name", .text)], retired: true),
            Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade), retired: true)]),
        ], version: 2)
    }

    @Test func aRetiredEntity_isKeptForOldDevices_andNeverReachesNewOnes() async throws {
        let folder = NSTemporaryDirectory() + "fm-retire-entity-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let v1 = try Schema(MixedVersionFleetTests.v1Entities)
        _ = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v1)
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: try Self.v2())
        #expect(server.migrations.map(\.description) == ["retire entity lists", "retire field tasks.listID"])
        let transport = InProcessTransport(server: server)
        let old = SyncClient(store: try Store(.memory, schema: v1, replica: ReplicaID(1)), transport: transport)
        let new = SyncClient(store: try Store(.memory, schema: try Self.v2(), replica: ReplicaID(2)), transport: transport)

        try await old.write { store in
            let list = try store.insert("lists", values: [.text("Home")])
            _ = try store.insert("tasks", values: [.text("Milk"), .integer(list)])
        }
        _ = try await old.sync()
        _ = try await new.sync()
        #expect(try await new.read { try $0.record("tasks", id: 1)?.values } == [.text("Milk"), .null])
        #expect(try await new.read { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(0))

        // The old device renames its list: the server keeps it, the new device never sees it.
        try await old.write { store in _ = try store.update("lists", id: 1, ["name": "House"]) }
        _ = try await old.sync()
        _ = try await new.sync()
        #expect(try await new.read { $0.maxRevision } == (try await old.read { $0.maxRevision }))
        #expect(try await new.read { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(0))
        #expect(try await server.withSQLite { try $0.scalar("SELECT name FROM lists WHERE id = 1") } == .text("House"))

        // A task the new device creates reaches the old one without a list.
        try await new.write { store in _ = try store.insert("tasks", values: [.text("Tea"), .null]) }
        _ = try await new.sync()
        _ = try await old.sync()
        #expect(try await old.read { try $0.record("tasks", id: 2)?.values } == [.text("Tea"), .null])

        // The old device deletes its list: the server cascades by the older rules, and the
        // new device loses the task with it.
        try await old.write { store in try store.delete("lists", id: 1) }
        _ = try await old.sync()
        _ = try await new.sync()
        #expect(try await new.read { try $0.record("tasks", id: 1) }?.isDeleted != false)
        #expect(try await new.read { try $0.record("tasks", id: 2)?.values } == [.text("Tea"), .null])
        #expect(try await new.read { try $0.pendingChanges().isEmpty })
    }

    @Test func theRetiringCodec_neitherWritesNorReadsTheEntity() throws {
        let v2 = try Self.v2()
        let codec = WireCodec(schema: v2)
        for body in [
            #"{"maxRevision":0,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"attributes":{"-1":{"name":"x"}}}}]}"#,
            #"{"maxRevision":0,"changeSets":[{"lists":{"create":[-1],"attributes":{"-1":{"name":"x"}}},"types":["lists"]}]}"#,
        ] {
            let error = #expect(throws: WireError.self) { try codec.decodeRequest(Array(body.utf8)) }
            #expect(error?.code == .unknownEntity)
            #expect(error?.description.contains("retired") == true)
        }
        let list = WireRecord(Record(entity: "lists", id: 1, values: [.text("Home")], stamps: [Stamp(clock: 9, replica: ReplicaID(3))]), revision: 4)
        let task = WireRecord(Record(entity: "tasks", id: 2, values: [.text("Milk"), .integer(1)], stamps: [Stamp(clock: 9, replica: ReplicaID(3)), Stamp(clock: 9, replica: ReplicaID(3))]), revision: 4)
        let response = SyncResponse(maxRevision: 4, changeSets: [ChangeSet(
            entities: [EntityChanges(entity: "lists", update: [1], records: [list]), EntityChanges(entity: "tasks", update: [2], records: [task])],
            refused: [RefusedRecord(entity: "lists", id: 1, code: "unauthorized", message: "no")])])
        let written = codec.encode(response)
        let text = String(decoding: written, as: UTF8.self)
        #expect(!text.contains("lists") && !text.contains("Home") && text.contains("Milk"))
        let read = try codec.decodeResponse(written)
        #expect(read.changeSets.first?.entities.map(\.entity) == ["tasks"])
        // What the server stores its replies with keeps every entity.
        let everything = String(decoding: WireCodec.everyField(of: v2).encode(response), as: UTF8.self)
        #expect(everything.contains("Home") && everything.contains("\"listID\":1"))
    }
}
