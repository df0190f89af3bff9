import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Foundation
import FieldMergeTestSupport
import Testing

/// Edits made with plain SQL, through a second connection to the store's file (as another
/// process or GRDB would), are synced with correct stamps, never overwritten silently.
@Suite struct PlainSQLCaptureTests {
    private func files() -> (String, () -> Void) {
        let path = NSTemporaryDirectory() + "fm-capture-\(UUID().uuidString).sqlite"
        return (path, { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } })
    }

    @Test func updatesWithPlainSQL_mergeWithAnotherDevicesEdits() async throws {
        let schema = try syncSchema()
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let (path, remove) = files()
        defer { remove() }
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        let b = SyncClient(store: try Store(.file(path: path), schema: schema, replica: ReplicaID(2)), transport: transport)
        try await a.write { store in
            let list = try store.insert("lists", values: ["Home"])
            _ = try store.insert("tasks", values: ["Milk", false, 10, .integer(list)])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        // B's app writes with its own SQL connection; A edits through the store.
        let other = try Database(.file(path: path))
        try other.execute("UPDATE tasks SET title = 'Oat milk', count = count + 5 WHERE id = 1")
        try await a.write { store in _ = try store.update("tasks", id: 1, ["done": true, "count": 13]) }
        _ = try await a.sync()
        let pending = try await b.write { store -> [PendingChange] in
            try store.captureExternalWrites()
            return try store.pendingChanges()
        }
        #expect(pending.map(\.kind) == [.update])
        #expect(pending.first?.fields == FieldMask([0, 2]))
        _ = try await b.sync()
        _ = try await a.sync()
        for client in [a, b] {
            let row = try await client.read { try $0.database.rows("SELECT title, done, count FROM tasks WHERE id = 1") }
            #expect(row == [[.text("Oat milk"), .integer(1), .integer(18)]])  // 10 + 5 + 3
        }
    }

    @Test func insertsAndDeletesWithPlainSQL_areSynced() async throws {
        let schema = try syncSchema()
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let (path, remove) = files()
        defer { remove() }
        let b = SyncClient(store: try Store(.file(path: path), schema: schema, replica: ReplicaID(2)), transport: transport)
        try await b.write { store in _ = try store.insert("lists", values: ["Kept"]) }
        _ = try await b.sync()
        let other = try Database(.file(path: path))
        try other.execute("INSERT INTO lists (id, name) VALUES (77, 'From SQL')")
        try other.execute("DELETE FROM lists WHERE name = 'Kept'")
        // The insert took the next temporary id, not the one it named.
        #expect(try other.rows("SELECT id FROM lists") == [[.integer(-2)]])
        let summary = try await b.sync()
        #expect(summary.sent == 2)
        let onServer = try await transport.withServer { try $0.database.rows("SELECT id, name FROM lists ORDER BY id") }
        #expect(onServer == [[.integer(2), .text("From SQL")]])
        #expect(try await b.read { try $0.database.rows("SELECT id, name FROM lists") } == [[.integer(2), .text("From SQL")]])
    }

    @Test func whatCannotBeCaptured_isRefusedClearly() throws {
        let store = try Store(.memory, schema: try syncSchema(), replica: ReplicaID(3))
        let list = try store.insert("lists", values: ["Home"])
        let renumber = #expect(throws: SQLiteError.self) { try store.database.execute("UPDATE lists SET id = 5 WHERE id = \(list)") }
        #expect(renumber?.message.contains("ids are given by the server") == true)
        // A value of the wrong type stops the store with a clear error until it is fixed.
        try store.database.execute("INSERT INTO tasks (title, done, count, listID) VALUES ('Milk', 'yes', 0, \(list))")
        let error = #expect(throws: StoreError.self) { try store.captureExternalWrites() }
        #expect(error?.code == .invalidRecord)
        #expect(error?.message.contains("'done'") == true)
        try store.database.execute("UPDATE tasks SET done = 1 WHERE done = 'yes'")
        try store.captureExternalWrites()
        #expect(try store.pendingChanges().map(\.entity) == ["lists", "tasks"])
    }

    @Test func theStoresOwnWrites_areNotCapturedTwice() throws {
        let store = try Store(.memory, schema: try syncSchema(), replica: ReplicaID(3))
        let list = try store.insert("lists", values: ["Home"])
        _ = try store.update("lists", id: list, ["name": "Work"])
        try store.delete("lists", id: list)
        #expect(try store.database.scalar("SELECT count(*) FROM __fm_captured") == .integer(0))
    }
}
