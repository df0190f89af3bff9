import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import Foundation
import FieldMergeTestSupport
import Testing

/// A create whose answer was lost, followed by more edits before the next sync.
@Suite struct LostAnswerCreateTests {
    @Test func aCreateWhoseAnswerWasLost_thenMoreEdits_isCreatedOnce() async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let lossy = LosingTransport(server, lose: 0)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: lossy)
        _ = try await client.withStore { store in try store.insert("lists", values: ["Home"]) }
        await lossy.setLose(1)
        _ = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        _ = try await client.withStore { store in try store.insert("lists", values: ["Work"]) }
        _ = try await client.sync()
        let lists = try await server.withServer { try $0.database.scalar("SELECT count(*) FROM lists") }
        #expect(lists == .integer(2))
        #expect(try await client.withStore { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(2))
    }

    /// The app closes after the lost answer; the reopened store sends the same request first.
    @Test func aLostAnswer_survivesAReopen_andTheRequestIsAnsweredOnce() async throws {
        let folder = NSTemporaryDirectory() + "fm-inflight-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        do {
            let store = try Store(.file(path: folder + "/c.sqlite"), schema: schema, replica: ReplicaID(1))
            let client = SyncClient(store: store, transport: LosingTransport(server, lose: 1))
            try await client.write { store in
                let list = try store.insert("lists", values: ["Home"])
                _ = try store.insert("tasks", values: ["Milk", false, 3, .integer(list)])
            }
            _ = await #expect(throws: SyncError.self) { _ = try await client.sync() }
            #expect(try await client.withStore { try $0.inFlightRequest() } != nil)
            try await client.withStore { $0.database.close() }
        }
        let client = SyncClient(store: try Store(.file(path: folder + "/c.sqlite"), schema: schema), transport: server)
        try await client.write { store in _ = try store.update("tasks", id: -2, ["count": 4]) }
        _ = try await client.sync()
        #expect(try await server.withServer { try $0.database.scalar("SELECT count(*) || '/' || sum(count) FROM tasks") } == .text("1/4"))
        #expect(try await server.withServer { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(1))
        #expect(try await client.withStore { try $0.inFlightRequest() } == nil)
        #expect(try await client.read { try $0.pendingChanges().isEmpty })
    }

    /// A request the server refuses as a whole changed nothing: it is not kept in flight.
    @Test func aRequestRefusedAsAWhole_isNotKeptInFlight() async throws {
        let schema = try syncSchema()
        let other = try Schema([Entity("lists", fields: [Field("name", .text)])])
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: other))
        let client = SyncClient(store: try Store(.memory, schema: schema), transport: server)
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(try await client.withStore { try $0.inFlightRequest() } == nil)
        #expect(try await client.read { try $0.pendingChanges().count } == 1)
    }

    /// The server moves to version 2 (a list entity renamed, a field added) between a
    /// version-1 client's request and its retry: the stored answer was migrated with the
    /// file, so the retry is recognised, answered in version 1, and nothing is created twice.
    @Test func aRetryAfterTheServerUpgraded_isStillRecognised() async throws {
        let folder = NSTemporaryDirectory() + "fm-retry-upgrade-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let v1 = try syncSchema()
        var entities = v1.entities
        entities[0] = Entity("boards", fields: [Field("name", .text)], renamedFrom: "lists")
        entities[1].fields[3] = Field("listID", .reference(to: "boards", onDelete: .cascade))
        entities[1].fields.append(Field("minutes", .integer, default: .integer(0)))
        let v2 = try Schema(entities, version: 2)
        do {
            let store = try Store(.file(path: folder + "/client.sqlite"), schema: v1, replica: ReplicaID(1))
            let lossy = LosingTransport(InProcessTransport(server: try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v1)), lose: 1)
            let client = SyncClient(store: store, transport: lossy)
            try await client.write { store in
                let list = try store.insert("lists", values: ["Home"])
                _ = try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
            }
            _ = await #expect(throws: SyncError.self) { _ = try await client.sync() }
            await lossy.inner.withServer { await $0.close() }
            try await client.withStore { $0.database.close() }
        }
        let store = try Store(.file(path: folder + "/client.sqlite"), schema: v1)
        let upgraded = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v2)
        let client = SyncClient(store: store, transport: InProcessTransport(server: upgraded))
        _ = try await client.sync()
        #expect(try upgraded.database.scalar("SELECT count(*) FROM boards") == .integer(1))
        #expect(try upgraded.database.scalar("SELECT count(*) FROM tasks") == .integer(1))
        #expect(try await client.read { try $0.record("tasks", id: 1)?.values } == ["Milk", false, 0, .integer(1)])
        #expect(try await client.read { try $0.pendingChanges().isEmpty })
    }
}
