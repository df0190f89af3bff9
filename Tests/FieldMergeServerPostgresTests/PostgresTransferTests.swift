import FieldMerge
import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Moving a data set from SQLite into PostgreSQL and back, each scenario in a fresh schema.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresTransferTests {
    @Test(arguments: TransferScenario.allCases, PostgresWriteOrder.allCases)
    func sqliteIntoPostgres(_ scenario: TransferScenario, order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            try await scenario.run(TransferHarness(
                makeSource: { try SQLiteServerStorage(.memory) },
                makeTarget: { try PostgresServerStorage(database.connector(), order: order) },
                revisionsMayHaveGaps: order == .parallel))
        }
    }

    @Test(arguments: TransferScenario.allCases, PostgresWriteOrder.allCases)
    func postgresIntoSQLite(_ scenario: TransferScenario, order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            try await scenario.run(TransferHarness(
                makeSource: { try PostgresServerStorage(database.connector(), order: order) },
                makeTarget: { try SQLiteServerStorage(.memory) }, revisionsMayHaveGaps: order == .parallel))
        }
    }
}
