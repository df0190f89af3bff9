import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import Foundation
import Testing

/// A create whose answer was lost, followed by more edits before the next sync.
@Suite struct LostAnswerCreateTests {
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
