import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// The protocol's conformance vectors (``ProtocolVectors``) on the embedded SQLite storage;
/// FieldMergeServerPostgresTests replays them on PostgreSQL.
@Suite struct ProtocolConformanceTests {
    @Test func vectorsArePresent() {
        #expect(ProtocolVectors.files.count >= 5)
    }

    @Test(arguments: ProtocolVectors.files)
    func vector(_ file: String) async throws {
        var server: RevisionServer?
        try await ProtocolVectors.replay(file) { schema in
            let made = try RevisionServer(.memory, schema: schema, wall: ManualWallClock(milliseconds: ProtocolVectors.wall))
            server = made
            return made
        } setNextID: { entity, id in
            try server?.database.run("INSERT OR REPLACE INTO \"__fm_ids\" VALUES (?, ?)", [.text(entity), .integer(id)])
        }
    }
}
