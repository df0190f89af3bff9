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
    /// A client that created `count` lists (synced), then edited each of them; the server
    /// takes what `authorize` allows.
    private func editedLists(
        _ count: Int64, mode: RevisionServer.Mode = .strict, authorize: @escaping RevisionServer.Authorization
    ) async throws -> (InProcessTransport, SyncClient) {
        let schema = try syncSchema()
        var options = RevisionServer.Options()
        options.mode = mode
        options.authorize = authorize
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        try await client.write { store in
            for index in 1...count { _ = try store.insert("lists", values: [.text("List \(index)")]) }
        }
        _ = try await client.sync()
        try await client.write { store in
            for id in 1...count { _ = try store.update("lists", id: id, ["name": .text("Edited \(id)")]) }
        }
        return (transport, client)
    }

    @Test(arguments: RevisionServer.Mode.allCases)
    func eightRefusedUpdates_areAnsweredAndSetAsideInOneRound(mode: RevisionServer.Mode) async throws {
        // A viewer may create, not edit.
        let (transport, viewer) = try await editedLists(8, mode: mode) { $0.kind != .update }
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
        let (transport, client) = try await editedLists(6) { !($0.kind == .update && $0.id % 2 == 0) }
        let summary = try await client.sync()
        #expect(summary.rounds == 2)
        #expect(summary.sent == 6 + 3)
        #expect(summary.refused.map(\.id).sorted() == [2, 4, 6])
        let names = try await transport.withServer { try $0.database.rows("SELECT name FROM lists ORDER BY id") }
        #expect(names.map { "\($0[0])" }.filter { $0.contains("Edited") }.count == 3)
    }
}
