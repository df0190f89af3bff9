import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeServerPostgres
import Testing

/// On PostgreSQL the records of a large change set are sent ahead, a statement per 2,048,
/// while the server goes on through the rest (Specs/http.md §8, "Large writes"). The answers
/// and the data must be what SQLite gives, conflicts among the change sets included; and a
/// statement sent ahead that fails must fail its request whole, even when a later change
/// set's savepoint rolls back (which would otherwise bring the transaction back without the
/// rows that failed).
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set"))
struct AheadWriteTests {
    static func lists(_ names: [String], from first: Int64 = -1) -> ChangeSet {
        let ids = (0..<Int64(names.count)).map { first - $0 }
        let records = zip(ids, names).map { WireRecord(id: $0, present: FieldMask.all(count: 1), values: [.text($1)]) }
        return ChangeSet(entities: [EntityChanges(entity: "lists", create: ids, records: records)])
    }

    /// A change set renaming lists `ids`, known at `revision`.
    static func renames(_ ids: ClosedRange<Int64>, at revision: Int64) -> ChangeSet {
        let records = ids.map { WireRecord(id: $0, present: FieldMask.all(count: 1), values: [.text("renamed \($0)")], revision: revision) }
        return ChangeSet(entities: [EntityChanges(entity: "lists", update: Array(ids), records: records)])
    }

    /// A change set deleting lists `ids`, known at `revision`.
    static func deletes(_ ids: ClosedRange<Int64>, at revision: Int64) -> ChangeSet {
        let records = ids.map { WireRecord(id: $0, present: FieldMask(), values: [.null], revision: revision) }
        return ChangeSet(entities: [EntityChanges(entity: "lists", delete: Array(ids), records: records)])
    }

    /// A stale update of list 1 (revision 0 never was its revision): a conflict decided after
    /// a read, so its savepoint is sent and rolled back.
    static var stale: ChangeSet {
        ChangeSet(entities: [EntityChanges(entity: "lists", update: [1], records: [
            WireRecord(id: 1, present: FieldMask.all(count: 1), values: [.text("stale")], revision: 0),
        ])])
    }

    /// Four large requests, then every list as a catch-up from 0 sees it.
    static func run(_ server: RevisionServer) async throws -> (answers: [SyncResponse], lists: [Int64: [Value]]) {
        var answers: [SyncResponse] = []
        func send(_ changeSets: [ChangeSet], after revision: Int64) async throws {
            answers.append(try await server.handle(SyncRequest(
                maxRevision: revision, changeSets: changeSets, clientID: "a", requestID: "\(answers.count + 1)", limit: 100_000)))
        }
        // Lists 1...5,000 in one change set.
        try await send([lists((1...5_000).map { "list \($0)" })], after: 0)
        let created = answers[0].maxRevision
        // 3,000 one-record change sets, a conflict among them.
        try await send((1...3_000).map { $0 == 1_500 ? stale : lists(["one \($0)"]) }, after: created)
        // Updates and deletes of the first ones, runs of another kind than creates.
        try await send([renames(1...4_500, at: created)], after: answers[1].maxRevision)
        try await send([deletes(2_001...4_500, at: answers[2].maxRevision)], after: answers[2].maxRevision)
        var named: [Int64: [Value]] = [:]
        for changeSet in try await server.handle(SyncRequest(maxRevision: 0, changeSets: [], limit: 100_000)).changeSets {
            for entity in changeSet.entities where entity.entity == "lists" {
                for record in entity.records { named[record.id] = Array(record.values) }
                for id in entity.delete { named[id] = nil }
            }
        }
        return (answers, named)
    }

    @Test(arguments: PostgresWriteOrder.allCases)
    func largeRequests_sentAhead_answerAsSQLite(order: PostgresWriteOrder) async throws {
        let sqlite = try await Self.run(try await RevisionServer(
            storage: try SQLiteServerStorage(), schema: try postgresSchema(), replica: ReplicaID(0x5E_5E),
            wall: ManualWallClock(milliseconds: 1_000_000)))
        #expect(sqlite.lists.count == 2_000 + 500 + 2_999)
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(try postgresSchema(), order: order)
            let storage = try #require(server.unsafeStorage as? PostgresServerStorage)
            let postgres = try await Self.run(server)
            // At least the 5,000 creates, 2,999 one-record change sets, 4,500 updates and
            // 2,500 deletes, less the runs of under 2,048 that went with a later statement.
            #expect(storage.statementsSentAhead >= 2 + 1 + 2 + 1)
            #expect(postgres.lists == sqlite.lists)
            if order == .locked {
                #expect(postgres.answers.map(\.maxRevision) == sqlite.answers.map(\.maxRevision))
                for (answer, expected) in zip(postgres.answers, sqlite.answers) { #expect(answer.changeSets == expected.changeSets) }
            } else {
                // Writes in parallel take a revision per change set before they begin: the
                // conflict's is a gap, and the revisions after it are one more than SQLite's.
                #expect(postgres.answers.map { $0.changeSets.map(\.conflict) } == sqlite.answers.map { $0.changeSets.map(\.conflict) })
            }
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"lists\"") == Int64(sqlite.lists.count))
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"__fm_deleted\"") == 2_500)
        }
    }

    @Test(arguments: PostgresWriteOrder.allCases)
    func aStatementSentAheadThatFails_failsItsRequestWhole(order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(try postgresSchema(), order: order)
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [Self.lists(["first"])], clientID: "a", requestID: "1"))
            // PostgreSQL refuses the tenth list of the first run sent ahead; the server cannot
            // know before it hears back.
            try await database.execute(
                "ALTER TABLE \"\(database.url.schema)\".\"lists\" ADD CONSTRAINT \"no_poison\" CHECK (\"name\" <> 'poison')")
            let names = (1...3_000).map { $0 == 10 ? "poison" : "list \($0)" }
            await #expect(throws: ServerError.self) {
                _ = try await server.handle(SyncRequest(
                    maxRevision: 1, changeSets: [Self.lists(names), Self.stale, Self.lists(["after"], from: -3_001)], clientID: "a", requestID: "2"))
            }
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"lists\"") == 1)
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"__fm_log\"") == 1)
            // The server, its pool and the data set go on as before.
            let next = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [Self.lists(["second"])], clientID: "a", requestID: "3"))
            #expect(next.changeSets.last?.conflict == false)
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"lists\"") == 2)
        }
    }
}
