import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import Testing

/// A device deletes a parent offline (its children cascade) while another device edits one of
/// those children, whose entity keeps edits over deletes (`editWins`): the answer to the
/// device's request carries the child alive, under a parent the device deleted and has not
/// had acknowledged. Found by `fieldmerge simulate --live`: the apply failed at COMMIT on the
/// foreign key, in every sync after, and the device never synced again.
@Suite struct EditedChildOfALocalDeleteTests {
    static func schema() throws -> Schema {
        try Schema([
            Entity("lists", fields: [Field("name", .text)]),
            Entity("notes", fields: [Field("body", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))],
                   deletePolicy: .editWins),
        ])
    }

    @Test(arguments: [RevisionServer.Mode.strict, .merge])
    func theChildFollowsTheLocalDeleteAndTheSyncCompletes(_ mode: RevisionServer.Mode) async throws {
        let schema = try Self.schema()
        var options = RevisionServer.Options()
        options.mode = mode
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let walls = [ManualWallClock(milliseconds: 1_000_000), ManualWallClock(milliseconds: 1_000_000)]
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1), wall: walls[0]), transport: transport)
        let b = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2), wall: walls[1]), transport: transport)
        try await a.write { _ = try $0.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        try await a.write { _ = try $0.insert("notes", values: ["Milk", 1]) }
        _ = try await a.sync()
        _ = try await b.sync()
        // B deletes the list offline (the note cascades); A edits the note meanwhile.
        try await b.write { try $0.delete("lists", id: 1) }
        walls[0].advance(by: 1_000)
        try await a.write { _ = try $0.update("notes", id: 1, ["body": "Oat milk"]) }
        _ = try await a.sync()
        walls[1].advance(by: 2_000)
        _ = try await b.sync()
        #expect(try await b.withStore { try $0.pendingChanges().isEmpty })
        // The list was deleted and nobody else touched it: it stays deleted, and the note
        // under it goes with it on every replica.
        _ = try await a.sync()
        for client in [a, b] {
            let rows = try await client.withStore { store in
                try store.database.rows("SELECT (SELECT count(*) FROM lists), (SELECT count(*) FROM notes)")
            }
            #expect(rows == [[.integer(0), .integer(0)]])
        }
    }
}
