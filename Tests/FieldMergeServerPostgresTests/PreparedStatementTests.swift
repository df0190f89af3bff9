import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import PostgresNIO
import Testing

/// A write's statements are prepared once per connection and then only executed; a
/// statement that failed on a connection runs unnamed there from then on (Specs/http.md §8,
/// "Prepared statements").
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PreparedStatementTests {
    /// The session's prepared statements of ours, by name, with their text.
    static func prepared(_ storage: PostgresServerStorage) async throws -> [String: String] {
        try await storage.read {
            var found: [String: String] = [:]
            for row in try await storage.run("SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'fm\\_%'") {
                let (name, text) = try row.decode((String, String).self)
                found[name] = text
            }
            return found
        }
    }

    @Test func aWritesStatements_arePreparedOnce_andReused() async throws {
        try await PostgresTestDatabase.with { database in
            // One connection: every transaction runs on the session the test looks at.
            let connector = database.connector(maximumConnections: 1)
            let server = try await RevisionServer(storage: try PostgresServerStorage(connector, order: .locked), schema: try postgresSchema())
            let storage = try #require(server.unsafeStorage as? PostgresServerStorage)
            let first = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("one")], clientID: "device", requestID: "1"))
            // The first write of the server also marks its revision's time (compaction), which
            // sends its row before the reply; the second is a write like any other.
            _ = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [createList("two")], clientID: "device", requestID: "2"))
            let afterTwo = try await Self.prepared(storage)
            let texts = Array(afterTwo.values)
            #expect(texts.contains { $0.contains("FOR UPDATE") && $0.contains("__fm_server") }, "the state's lock: \(texts)")
            #expect(texts.contains { $0.hasPrefix("WITH written AS (INSERT INTO") && !$0.contains("__fm_replies") }, "the record's write alone")
            #expect(texts.contains { $0.hasPrefix("WITH written AS (INSERT INTO") && $0.contains("logged AS (INSERT INTO") && $0.contains("__fm_replies") },
                "the record's write with the stored reply, in one statement")

            for index in 3...5 {
                _ = try await server.handle(SyncRequest(
                    maxRevision: Int64(index - 1), changeSets: [createList("list \(index)")], clientID: "device", requestID: "\(index)"))
            }
            // Three writes more, of the same kinds: no statement prepared anew.
            let afterFive = try await Self.prepared(storage)
            #expect(afterFive == afterTwo, "new: \(afterFive.filter { afterTwo[$0.key] == nil }.values)")
            #expect(connector.statements.count == afterTwo.count)
            #expect(revisions(first.changeSets) == [1])
            let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(all.maxRevision == 5)
        }
    }

    /// A NULL and a value bind different types: a record's write is prepared for each, and
    /// each value comes back as written, whatever the order on one connection.
    @Test func nullsAndValuesOfOneField_eachComeBackAsWritten() async throws {
        try await PostgresTestDatabase.with { database in
            let connector = database.connector(maximumConnections: 1)
            let server = try await RevisionServer(storage: try PostgresServerStorage(connector, order: .locked), schema: try postgresSchema())
            let names: [Value] = [.null, .text("x"), .null, .text("y"), .text("z"), .null]
            for (index, name) in names.enumerated() {
                let record = WireRecord(id: -1, present: FieldMask.all(count: 1), values: [name])
                let changeSet = ChangeSet(entities: [EntityChanges(entity: "lists", create: [-1], records: [record])])
                _ = try await server.handle(SyncRequest(maxRevision: Int64(index), changeSets: [changeSet]))
            }
            let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
            let lists = try #require(all.changeSets.first?.entities.first { $0.entity == "lists" })
            let byID = Dictionary(uniqueKeysWithValues: lists.records.map { ($0.id, $0.values[0]) })
            #expect((1...Int64(names.count)).map { byID[$0] } == names)
            // The id counter is written with the state, each request moving it on.
            let ids = "\(try PostgresServerStorage.quote(database.url.schema)).\"__fm_ids\""
            #expect(try await database.count("SELECT \"next\" FROM \(ids) WHERE \"entity\" = 'lists'") == Int64(names.count) + 1)
        }
    }

    /// PostgresNIO remembers a failed preparation for the connection's life and fails every
    /// later call by that name there. A text that failed once runs unnamed: once its table
    /// exists, it succeeds on the same connection.
    @Test func aStatementThatFailedOnce_runsUnnamedThereAfter() async throws {
        try await PostgresTestDatabase.with { database in
            let connector = database.connector(maximumConnections: 1)
            let server = try await RevisionServer(storage: try PostgresServerStorage(connector, order: .locked), schema: try postgresSchema())
            let storage = try #require(server.unsafeStorage as? PostgresServerStorage)
            let table = "\(try PostgresServerStorage.quote(database.url.schema)).\"probe\""
            let sql = "SELECT count(*) FROM \(table)"
            await #expect(throws: ServerError.self) {
                try await storage.read { try await storage.run(sql, prepared: true) }
            }
            try await database.execute("CREATE TABLE \(table) (\"x\" BIGINT)")
            let count = try await storage.read { try await storage.scalar(sql, prepared: true, as: Int64.self) }
            #expect(count == 0)
            #expect(try await Self.prepared(storage).values.contains(sql) == false, "runs unnamed on this connection")
        }
    }
}
