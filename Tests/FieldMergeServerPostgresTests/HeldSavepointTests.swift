import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeServerPostgres
import Synchronization
import Testing

/// On PostgreSQL a change set's savepoint is sent only when a statement has to go out inside
/// it, and its record writes and new ids stay in the server until then: a request of many
/// small change sets costs a few round trips, not four per change set. A change set that ends
/// as a conflict must still leave nothing behind, whether its savepoint was sent or not, and
/// give its ids back: the answers and the data equal SQLite's, whose savepoints are real.
struct HeldSavepointTests {
    /// Refuses the first create of list 4, so that the change set creating it ends as a
    /// conflict without any statement (the refusal is decided in memory). A new refusal each
    /// time it is asked for: one per server.
    static var options: RevisionServer.Options {
        let refused = Mutex(false)
        var options = RevisionServer.Options()
        options.authorize = { request in
            guard request.entity == "lists", request.id == 4, request.kind == .create else { return true }
            return refused.withLock { done in
                defer { done = true }
                return done
            }
        }
        return options
    }

    static func createLists(_ names: [String]) -> ChangeSet {
        let ids = (1...Int64(names.count)).map { -$0 }
        let records = zip(ids, names).map { WireRecord(id: $0, present: FieldMask.all(count: 1), values: [.text($1)]) }
        return ChangeSet(entities: [EntityChanges(entity: "lists", create: ids, records: records)])
    }

    /// The requests, and what every list holds after them.
    /// `rows` counts the rows of the lists table itself, where the storage can say: a row
    /// written past the revision the server stands at is invisible to every catch-up.
    static func run(
        _ server: RevisionServer, rows: (() async throws -> Int)? = nil
    ) async throws -> (answers: [SyncResponse], lists: [[Int64: [Value]]], rows: [Int]) {
        var counted: [Int] = []
        var answers: [SyncResponse] = []
        var lists: [[Int64: [Value]]] = []
        func snapshot() async throws {
            var named: [Int64: [Value]] = [:]
            for changeSet in try await server.handle(SyncRequest(maxRevision: 0, changeSets: [])).changeSets {
                for entity in changeSet.entities where entity.entity == "lists" {
                    for record in entity.records { named[record.id] = Array(record.values) }
                }
            }
            lists.append(named)
            if let rows { counted.append(try await rows()) }
        }
        func send(_ changeSets: [ChangeSet], after revision: Int64) async throws {
            answers.append(try await server.handle(SyncRequest(
                maxRevision: revision, changeSets: changeSets, clientID: "a", requestID: "\(answers.count + 1)")))
        }
        try await send([createLists(["first"])], after: 0)
        // The second change set is refused in memory (list 4, "three"): its savepoint was
        // never sent, and "two" (list 3), held unsent, must go with it.
        try await send([createLists(["one"]), createLists(["two", "three"])], after: 1)
        try await snapshot()
        // "five" takes the id "two" gave back. The second change set reads list 1 (a stale
        // update): its savepoint is sent then, after "five"'s row, and rolled back with "six"
        // (list 4), written after it; "seven", in the next request, takes its id.
        let stale = WireRecord(id: 1, present: FieldMask.all(count: 1), values: [.text("renamed")], revision: 0)
        var second = createLists(["six"])
        second.entities[0].update = [1]
        second.entities[0].records.append(stale)
        try await send([createLists(["five"]), second], after: 2)
        try await send([createLists(["seven"])], after: 3)
        try await snapshot()
        return (answers, lists, counted)
    }

    static func check(_ outcome: (answers: [SyncResponse], lists: [[Int64: [Value]]], rows: [Int])) {
        #expect(outcome.lists == [
            [1: [.text("first")], 2: [.text("one")]],
            [1: [.text("first")], 2: [.text("one")], 3: [.text("five")], 4: [.text("seven")]],
        ])
        #expect(outcome.answers.map { $0.changeSets.map(\.conflict) } == [[false], [false, true], [false, true], [false]])
        #expect(outcome.answers[1].changeSets[1].refused.map(\.id) == [-2])
        #expect(outcome.answers.map(\.maxRevision) == [1, 2, 3, 4])
    }

    @Test func sqlite_conflictsAmongManyChangeSets_leaveNothingBehind() async throws {
        let server = try await RevisionServer(
            storage: try SQLiteServerStorage(), schema: try postgresSchema(), options: Self.options, replica: ReplicaID(0x5E_5E),
            wall: ManualWallClock(milliseconds: 1_000_000))
        Self.check(try await Self.run(server))
    }

    @Test(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set"))
    func postgres_conflictsAmongManyChangeSets_leaveNothingBehind_andAnswerAsSQLite() async throws {
        let sqlite = try await Self.run(try await RevisionServer(
            storage: try SQLiteServerStorage(), schema: try postgresSchema(), options: Self.options, replica: ReplicaID(0x5E_5E),
            wall: ManualWallClock(milliseconds: 1_000_000)))
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(try postgresSchema(), options: Self.options)
            let postgres = try await Self.run(server) {
                Int(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"lists\"") ?? -1)
            }
            Self.check(postgres)
            #expect(postgres.rows == [2, 4])
            #expect(postgres.lists == sqlite.lists)
            for (answer, expected) in zip(postgres.answers, sqlite.answers) {
                #expect(answer.maxRevision == expected.maxRevision)
                #expect(answer.changeSets == expected.changeSets)
            }
        }
    }
}
