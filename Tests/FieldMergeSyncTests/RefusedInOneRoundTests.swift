import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Testing

/// Every refused record of a change set comes in one answer (Specs/protocol.md, §3): a
/// viewer editing 8 records took 8 rounds and uploaded 36 records.
@Suite struct RefusedInOneRoundTests {
    @Test(arguments: RevisionServer.Mode.allCases)
    func eightRefusedUpdates_areAnsweredAndSetAsideInOneRound(mode: RevisionServer.Mode) async throws {
        let schema = try syncSchema()
        var options = RevisionServer.Options()
        options.mode = mode
        options.authorize = { change in change.kind != .update }   // a viewer may create, not edit
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let viewer = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        try await viewer.write { store in
            for index in 1...8 { _ = try store.insert("lists", values: [.text("List \(index)")]) }
        }
        _ = try await viewer.sync()
        try await viewer.write { store in
            for id in Int64(1)...8 { _ = try store.update("lists", id: id, ["name": .text("Edited \(id)")]) }
        }
        let before = transport.requests
        let summary = try await viewer.sync()
        #expect(transport.requests - before == 1)
        #expect(summary.rounds == 1)
        #expect(summary.sent == 8)
        #expect(summary.refused.count == 8)
        #expect(Set(summary.refused.map(\.id)) == Set(Int64(1)...8))
        let unsynced = try await viewer.write { try $0.unsyncedChanges() }
        #expect(unsynced.count == 8 && unsynced.allSatisfy { $0.refusal?.code == "unauthorized" })
        #expect(try await viewer.write { try $0.pendingChanges() }.isEmpty)
        // The refused edits stay on the device, the server keeps its values.
        #expect(try await viewer.read { try $0.database.scalar("SELECT name FROM lists WHERE id = 3") } == .text("Edited 3"))
        #expect(try await transport.withServer { try $0.database.scalar("SELECT name FROM lists WHERE id = 3") } == .text("List 3"))
    }

    /// A refusal among records the server takes: the refused ones set aside together, the
    /// others sent again in the next round and committed.
    @Test func refusalsAmongAcceptedRecords_costOneRoundMore() async throws {
        let schema = try syncSchema()
        var options = RevisionServer.Options()
        options.authorize = { change in !(change.kind == .update && change.id % 2 == 0) }
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        try await client.write { store in
            for index in 1...6 { _ = try store.insert("lists", values: [.text("List \(index)")]) }
        }
        _ = try await client.sync()
        try await client.write { store in
            for id in Int64(1)...6 { _ = try store.update("lists", id: id, ["name": .text("Edited \(id)")]) }
        }
        let summary = try await client.sync()
        #expect(summary.rounds == 2)
        #expect(summary.sent == 6 + 3)
        #expect(summary.refused.map(\.id).sorted() == [2, 4, 6])
        let names = try await transport.withServer { try $0.database.rows("SELECT name FROM lists ORDER BY id") }
        #expect(names.map { "\($0[0])" }.filter { $0.contains("Edited") }.count == 3)
    }
}
