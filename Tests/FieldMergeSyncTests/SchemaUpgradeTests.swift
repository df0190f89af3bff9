import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation
import Testing

/// The server and its devices move to a newer schema version together: the server's file
/// and every store migrate when they open, and sync goes on (Specs/schema.md, "Evolution").
@Suite struct SchemaUpgradeTests {
    static let v1Entities = [
        Entity("lists", fields: [Field("name", .text)]),
        Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))]),
    ]

    static func v2() throws -> Schema {
        try Schema([
            Entity("lists", fields: [Field("label", .text, renamedFrom: "name")]),
            Entity("tasks", fields: [
                Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade)),
                Field("minutes", .integer, strategy: .counter, default: .integer(0)),
            ]),
            Entity("comments", fields: [Field("body", .text), Field("taskID", .reference(to: "tasks", onDelete: .cascade))]),
        ], version: 2)
    }

    @Test func serverAndDevicesMigrate_andSyncGoesOn() async throws {
        let folder = NSTemporaryDirectory() + "fm-upgrade-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (serverFile, aFile, bFile) = (folder + "/server.sqlite", folder + "/a.sqlite", folder + "/b.sqlite")
        let v1 = try Schema(Self.v1Entities)
        do {
            let transport = InProcessTransport(server: try RevisionServer(.file(path: serverFile), schema: v1))
            let a = SyncClient(store: try Store(.file(path: aFile), schema: v1, replica: ReplicaID(1)), transport: transport)
            let b = SyncClient(store: try Store(.file(path: bFile), schema: v1, replica: ReplicaID(2)), transport: transport)
            try await a.write { store in
                let list = try store.insert("lists", values: [.text("Home")])
                _ = try store.insert("tasks", values: [.text("Milk"), .integer(list)])
            }
            _ = try await a.sync()
            _ = try await b.sync()
            // B edits offline under v1; the edit waits in its outbox through the upgrade.
            try await b.write { store in _ = try store.update("tasks", id: 1, ["title": "Oat milk"]) }
            try await a.withStore { $0.database.close() }
            try await b.withStore { $0.database.close() }
        }
        let v2 = try Self.v2()
        let server = try RevisionServer(.file(path: serverFile), schema: v2)
        #expect(server.migrations.map(\.description) == ["add entity comments", "rename field lists.name to label", "add field tasks.minutes"])
        let transport = InProcessTransport(server: server)
        let a = SyncClient(store: try Store(.file(path: aFile), schema: v2), transport: transport)
        let b = SyncClient(store: try Store(.file(path: bFile), schema: v2), transport: transport)
        _ = try await b.sync()
        try await a.write { store in
            _ = try store.update("tasks", id: 1, ["minutes": .integer(5)])
            _ = try store.insert("comments", values: [.text("2 litres"), .integer(1)])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        _ = try await a.sync()
        for client in [a, b] {
            let task = try #require(try await client.read { try $0.record("tasks", id: 1) })
            #expect(task.values == [.text("Oat milk"), .integer(1), .integer(5)])
            #expect(try await client.read { try $0.record("lists", id: 1)?.values } == [.text("Home")])
            #expect(try await client.read { try $0.database.scalar("SELECT body FROM comments") } == .text("2 litres"))
            #expect(try await client.read { try $0.pendingChanges().isEmpty })
        }
    }

    @Test func aServerFileRefusesAnUnsafeChange_byName() throws {
        let file = NSTemporaryDirectory() + "fm-upgrade-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) } }
        _ = try RevisionServer(.file(path: file), schema: Schema(Self.v1Entities))
        let typeChanged = try Schema([
            Entity("lists", fields: [Field("name", .integer)]), Self.v1Entities[1],
        ], version: 2)
        let error = #expect(throws: ServerError.self) { try RevisionServer(.file(path: file), schema: typeChanged) }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains("change the type of lists.name from text to integer") == true)
        // Nothing changed: the file still opens with its own schema.
        #expect(try RevisionServer(.file(path: file), schema: Schema(Self.v1Entities)).migrations.isEmpty)
    }

    /// A device still on v1 against a server on v2: refused as a whole with a clear code,
    /// nothing written, the change kept for after the app's update.
    @Test func aClientWithAnotherSchema_isRefusedAndChangesNothing() async throws {
        let server = try RevisionServer(.memory, schema: Self.v2())
        let transport = InProcessTransport(server: server)
        let old = SyncClient(store: try Store(.memory, schema: Schema(Self.v1Entities), replica: ReplicaID(3)), transport: transport)
        try await old.write { store in _ = try store.insert("lists", values: [.text("Home")]) }
        let error = try #require(await #expect(throws: SyncError.self) { try await old.sync() })
        #expect(error.code == .rejected && !error.isRetryable)
        let rejected = try #require(error.cause as? SyncRequestRejected)
        #expect(rejected.status == 409 && rejected.code == "incompatibleSchema")
        #expect(rejected.message.contains("update the app"))
        #expect(await server.maxRevision == 0)
        #expect(try await old.read { try $0.pendingChanges().count } == 1)
    }

    @Test func theSchemaTravelsInTheRequest() throws {
        let schema = try Self.v2()
        let codec = WireCodec(schema: schema)
        let request = SyncRequest(maxRevision: 3, changeSets: [], schemaVersion: 2, schemaFingerprint: schema.fingerprint)
        #expect(try codec.decodeRequest(codec.encode(request)) == request)
        let v1 = try Schema(Self.v1Entities)
        #expect(schema.fingerprint.count == 16 && schema.fingerprint != v1.fingerprint)
        let other = SyncRequest(maxRevision: 3, changeSets: [], schemaVersion: 1, schemaFingerprint: "0123456789abcdef")
        let error = #expect(throws: WireError.self) { try codec.decodeRequest(codec.encode(other)) }
        #expect(error?.code == .incompatibleSchema)
    }
}
