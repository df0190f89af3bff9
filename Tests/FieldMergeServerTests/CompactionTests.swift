import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Compaction with a horizon on the embedded SQLite storage (the scenarios are shared with
/// PostgreSQL's suite).
@Suite struct CompactionTests {
    var harness: CompactionHarness { CompactionHarness(
        makeServer: { schema, wall in try RevisionServer(.memory, schema: schema, wall: wall) },
        logEntries: { server in
            guard case .integer(let count)? = try server.database.scalar("SELECT count(*) FROM \"__fm_log\"") else { return -1 }
            return Int(count)
        },
        dropIDCounters: { server in try server.database.execute("DELETE FROM \"__fm_ids\"") }) }

    @Test(arguments: CompactionScenario.allCases)
    func scenario(_ scenario: CompactionScenario) async throws {
        try await scenario.run(harness)
    }
}
