import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import FieldMergeTestSupport
import Testing

/// ``HostileInputScenario`` on PostgreSQL, each in a fresh schema: the same answers as on
/// SQLite (`HostileInputTests`), U+0000 and -0.0 included; and a data set made before stored
/// replies had an owner, a time and a digest opens and still replays.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresHostileInputTests {
    @Test(arguments: HostileInputScenario.allCases)
    func scenario(_ scenario: HostileInputScenario) async throws {
        try await PostgresTestDatabase.with { database in
            try await scenario.run(HostileInputHarness(
                makeServer: { schema, options, wall in try await database.server(schema, wall: wall, options: options) },
                storedReplies: { _ in
                    Int(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"__fm_replies\"") ?? -1)
                }))
        }
    }

    @Test func aDataSetMadeBeforeReplyDigestsOpensAndReplays() async throws {
        try await PostgresTestDatabase.with { database in
            let schema = HostileInputScenario.schema
            let sent = SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
                Send.create("notes", -1, [.text("kept"), .textSet([]), .real(1)]),
            ])], clientID: "c", requestID: "r")
            let first = try await database.server(schema).handle(sent)
            let replies = "\"\(database.url.schema)\".\"__fm_replies\""
            try await database.execute("DROP INDEX \"\(database.url.schema)\".\"__fm_replies_stored\"")
            try await database.execute("DROP INDEX \"\(database.url.schema)\".\"__fm_replies_owner\"")
            try await database.execute("ALTER TABLE \(replies) DROP COLUMN \"owner\", DROP COLUMN \"stored\", DROP COLUMN \"digest\"")
            let server = try await database.server(schema)
            #expect(try await database.count(
                "SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = '__fm_replies'",
                database.url.schema) == 6)
            #expect(try await database.count("SELECT count(*) FROM \(replies) WHERE digest IS NULL AND stored > 1600000000000") == 1)
            #expect(try await database.count(
                "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname IN ('__fm_replies_stored', '__fm_replies_owner')", database.url.schema) == 2)
            #expect(try await server.handle(sent) == first)
            var other = sent
            other.changeSets[0].entities[0].records[0].values[0] = .text("other")
            #expect(try await server.handle(other).changeSets == first.changeSets)
            #expect(await server.maxRevision == 1)
            // New replies get a digest again: another request id reused with other change sets is refused.
            let next = SyncRequest(maxRevision: 1, changeSets: sent.changeSets, clientID: "c", requestID: "r2")
            _ = try await server.handle(next)
            var altered = next
            altered.changeSets = other.changeSets
            let error = await #expect(throws: ServerError.self) { _ = try await server.handle(altered) }
            #expect(error?.code == .idempotencyMismatch)
        }
    }
}
