import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Moving a data set between SQLite storages (the scenarios are shared with PostgreSQL's
/// suite, which copies between SQLite and PostgreSQL).
@Suite struct TransferTests {
    @Test(arguments: TransferScenario.allCases)
    func scenario(_ scenario: TransferScenario) async throws {
        try await scenario.run(TransferHarness(
            makeSource: { try SQLiteServerStorage(.memory) },
            makeTarget: { try SQLiteServerStorage(.memory) }))
    }
}
