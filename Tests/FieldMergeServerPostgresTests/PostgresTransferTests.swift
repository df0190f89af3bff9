import FieldMerge
import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Moving a data set from SQLite into PostgreSQL and back, each scenario in a fresh schema.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresTransferTests {
    @Test(arguments: TransferScenario.allCases)
    func sqliteIntoPostgres(_ scenario: TransferScenario) async throws {
        try await PostgresTestDatabase.with { database in
            try await scenario.run(TransferHarness(
                makeSource: { try SQLiteServerStorage(.memory) },
                makeTarget: { try PostgresServerStorage(database.connector()) }))
        }
    }

    @Test(arguments: TransferScenario.allCases)
    func postgresIntoSQLite(_ scenario: TransferScenario) async throws {
        try await PostgresTestDatabase.with { database in
            try await scenario.run(TransferHarness(
                makeSource: { try PostgresServerStorage(database.connector()) },
                makeTarget: { try SQLiteServerStorage(.memory) }))
        }
    }
}
