import FieldMerge
import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeTestSupport
import Testing

/// Compaction with a horizon on PostgreSQL, each scenario in a fresh schema.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresCompactionTests {
    @Test(arguments: CompactionScenario.allCases, PostgresWriteOrder.allCases)
    func scenario(_ scenario: CompactionScenario, order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            let schema = database.url.schema
            try await scenario.run(CompactionHarness(
                makeServer: { schema, wall in try await database.server(schema, wall: wall, order: order) },
                logEntries: { _ in Int(try await database.count("SELECT count(*) FROM \"\(schema)\".\"__fm_log\"") ?? -1) },
                dropIDCounters: { _ in try await database.execute("DELETE FROM \"\(schema)\".\"__fm_ids\"") }))
        }
    }
}
