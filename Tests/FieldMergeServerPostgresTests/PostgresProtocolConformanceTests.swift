import FieldMerge
import FieldMergeServer
import FieldMergeTestSupport
import Testing

/// The same vectors on PostgreSQL, each in a fresh schema.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresProtocolConformanceTests {
    @Test(arguments: ProtocolVectors.files)
    func vector(_ file: String) async throws {
        try await PostgresTestDatabase.with { database in
            try await ProtocolVectors.replay(file) { schema in
                try await database.server(schema, wall: ManualWallClock(milliseconds: ProtocolVectors.wall))
            } setNextID: { entity, id in
                try await database.execute(
                    "INSERT INTO \"\(database.url.schema)\".\"__fm_ids\" (\"entity\", \"next\") VALUES ($1, $2) "
                        + "ON CONFLICT (\"entity\") DO UPDATE SET \"next\" = EXCLUDED.\"next\"",
                    entity, id)
            }
        }
    }
}
