import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import Testing

/// The stored replies are compressed with lz4 where the PostgreSQL server has it, on a new
/// data set and on one made before (whose servers compressed them with pglz).
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set"))
struct ReplyCompressionTests {
    @Test func storedReplies_areCompressedWithLZ4_whereTheServerHasIt() async throws {
        try await PostgresTestDatabase.with { database in
            let schema = database.url.schema
            let column = "SELECT (attcompression = 'l')::INT::INT8 FROM pg_attribute WHERE attrelid = '\"\(schema)\".\"__fm_replies\"'::regclass "
                + "AND attname = 'response'"
            let server = try await database.server(try postgresSchema())
            // Whether this PostgreSQL can: a column of its own says.
            var hasLZ4 = true
            do {
                try await database.execute("CREATE TABLE \"\(schema)\".\"lz4_probe\" (\"b\" BYTEA COMPRESSION lz4)")
            } catch {
                hasLZ4 = false
            }
            #expect(try await database.count(column) == (hasLZ4 ? 1 : 0))
            let names = (1...2_000).map { "list \($0)" }
            let ids = (1...Int64(names.count)).map { -$0 }
            let records = zip(ids, names).map { WireRecord(id: $0, present: FieldMask.all(count: 1), values: [.text($1)]) }
            let response = try await server.handle(SyncRequest(
                maxRevision: 0, changeSets: [ChangeSet(entities: [EntityChanges(entity: "lists", create: ids, records: records)])],
                clientID: "a", requestID: "1"))
            #expect(response.changeSets.last?.conflict == false)
            let compressed = "SELECT count(*) FROM \"\(schema)\".\"__fm_replies\" WHERE pg_column_compression(\"response\") = 'lz4'"
            #expect(try await database.count(compressed) == (hasLZ4 ? 1 : 0))
            guard hasLZ4 else { return }
            // A data set made before: the next server to open it changes the column.
            try await database.execute("ALTER TABLE \"\(schema)\".\"__fm_replies\" ALTER COLUMN \"response\" SET COMPRESSION pglz")
            #expect(try await database.count(column) == 0)
            _ = try await database.server(try postgresSchema())
            #expect(try await database.count(column) == 1)
        }
    }
}
