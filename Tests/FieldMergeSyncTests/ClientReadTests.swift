import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Foundation
import FieldMergeTestSupport
import Testing

@Suite struct ClientReadTests {
    private func fileClient(_ schema: Schema, transport: any SyncTransport) throws -> (SyncClient, String) {
        let path = NSTemporaryDirectory() + "fm-client-read-\(UUID().uuidString).sqlite"
        return (SyncClient(store: try Store(.file(path: path), schema: schema, replica: ReplicaID(3)), transport: transport), path)
    }

    private func removeFiles(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// A read runs on its own connection: it sees the last committed state while the
    /// writer holds an open transaction, instead of waiting for it.
    @Test func aRead_seesCommittedState_whileTheWriterIsInsideATransaction() async throws {
        let schema = try syncSchema()
        let (client, path) = try fileClient(schema, transport: InProcessTransport(server: try RevisionServer(.memory, schema: schema)))
        defer { removeFiles(path) }
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        // `withStore`: raw access, no transaction of the client's around it (`write` is one).
        try await client.withStore { store in
            try store.database.execute("BEGIN IMMEDIATE")
            try store.database.run("UPDATE lists SET name = 'Uncommitted'")
        }
        let seen = try await client.read { store in try store.database.scalar("SELECT name FROM lists") }
        #expect(seen == .text("Home"))
        try await client.withStore { store in try store.database.execute("COMMIT") }
        let after = try await client.read { store in try store.database.scalar("SELECT name FROM lists") }
        #expect(after == .text("Uncommitted"))
    }

    @Test func aRead_cannotWrite() async throws {
        let schema = try syncSchema()
        let (client, path) = try fileClient(schema, transport: InProcessTransport(server: try RevisionServer(.memory, schema: schema)))
        defer { removeFiles(path) }
        await #expect(throws: StoreError.self) {
            try await client.read { store in _ = try store.insert("lists", values: ["Sneaky"]) }
        }
        #expect(try await client.write { try $0.pendingChanges() }.isEmpty)
    }

    /// Reads during a sync in flight see the store as it was before the sync, then after.
    @Test func readsDuringASync_seeWholeRounds() async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let slow = SlowTransport(server)
        let (client, path) = try fileClient(schema, transport: slow)
        defer { removeFiles(path) }
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        let sync = Task { try await client.sync() }
        try await slow.waitForARequest()
        let during = try await client.read { store in try store.database.scalar("SELECT id FROM lists") }
        _ = try await sync.value
        let after = try await client.read { store in try store.database.scalar("SELECT id FROM lists") }
        #expect(during == .integer(-1))
        #expect(after == .integer(1))
    }

    @Test func aRequestTheServerRefuses_isNotRetryable() async throws {
        let schema = try syncSchema()
        let other = try Schema([Entity("lists", fields: [Field("name", .text)])])
        let client = SyncClient(
            store: try Store(.memory, schema: schema, replica: ReplicaID(3)),
            transport: InProcessTransport(server: try RevisionServer(.memory, schema: other)))
        try await client.write { store in
            let list = try store.insert("lists", values: ["Home"])
            _ = try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
        }
        let failure = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(failure?.code == .rejected)
        #expect(failure?.isRetryable == false)
        #expect(failure?.cause is SyncRequestRejected)
    }
}
