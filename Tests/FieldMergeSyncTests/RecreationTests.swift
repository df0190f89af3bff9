import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Testing

/// A record one device deletes while another edits it, with `editWins`: the edit brings it
/// back under its old id on the server and on every device.
@Suite struct RecreationTests {
    static func schema(_ policy: DeletePolicy) throws -> Schema {
        try Schema([
            Entity("projects", fields: [Field("name", .text), Field("minutes", .integer, strategy: .counter)], deletePolicy: policy),
            Entity("tasks", fields: [Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))],
                   deletePolicy: policy),
        ])
    }

    @Test(arguments: [RevisionServer.Mode.strict, .merge])
    func anEditedRecord_deletedElsewhere_comesBackEverywhere(_ mode: RevisionServer.Mode) async throws {
        let schema = try Self.schema(.editWins)
        var options = RevisionServer.Options()
        options.mode = mode
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        let b = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport)
        try await a.write { store in
            let project = try store.insert("projects", values: ["Launch", 30])
            _ = try store.insert("tasks", values: ["Edited on B", .integer(project)])
            _ = try store.insert("tasks", values: ["Untouched", .integer(project)])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        // A deletes the project (cascading to its tasks); B, offline, edits it and one task.
        try await a.write { store in try store.delete("projects", id: 1) }
        _ = try await a.sync()
        try await b.write { store in
            _ = try store.update("projects", id: 1, ["minutes": 45])
            _ = try store.update("tasks", id: 1, ["title": "Edited on B, again"])
        }
        let summary = try await b.sync()
        #expect(summary.refused.isEmpty)
        _ = try await a.sync()
        for client in [a, b] {
            #expect(try await client.read { try $0.database.rows("SELECT id, name, minutes FROM projects") }
                    == [[.integer(1), .text("Launch"), .integer(45)]])
            #expect(try await client.read { try $0.database.rows("SELECT id, title, projectID FROM tasks") }
                    == [[.integer(1), .text("Edited on B, again"), .integer(1)]])
            #expect(try await client.write { try $0.unsyncedChanges() }.isEmpty)
        }
        // B's later edits keep flowing.
        try await b.write { store in _ = try store.update("projects", id: 1, ["name": "Launch v2"]) }
        _ = try await b.sync()
        _ = try await a.sync()
        #expect(try await a.read { try $0.database.scalar("SELECT name FROM projects") } == .text("Launch v2"))
    }

    @Test func withDeleteWins_theDeleteStays() async throws {
        let schema = try Self.schema(.deleteWins)
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        let b = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport)
        try await a.write { store in _ = try store.insert("projects", values: ["Launch", 30]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await a.write { store in try store.delete("projects", id: 1) }
        _ = try await a.sync()
        try await b.write { store in _ = try store.update("projects", id: 1, ["minutes": 45]) }
        _ = try await b.sync()
        #expect(try await b.read { try $0.database.scalar("SELECT count(*) FROM projects") } == .integer(0))
        #expect(try await b.write { try $0.unsyncedChanges() }.isEmpty)
    }
}
