import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeServerPostgres
import Foundation
import Testing

/// What one request costs in storage calls and PostgreSQL statements (round trips), for the
/// requests of issue #29: one create with its catch-up, a change set of 1,000 creates,
/// 1,000 one-record change sets, a change set of 1,000 updates. A regression to one call per
/// record fails here.
struct RoundTripCountTests {
    /// The counts of one request: storage calls, and PostgreSQL statements when on PostgreSQL.
    struct Cost: CustomStringConvertible {
        var calls: Int
        var statements: Int?
        var seconds: Double
        var description: String {
            "\(calls) calls" + (statements.map { ", \($0) statements" } ?? "") + String(format: ", %.2f s", seconds)
        }
    }

    struct Costs {
        var oneCreate: Cost
        var thousandCreates: Cost
        var thousandChangeSets: Cost
        var thousandUpdates: Cost
    }

    static func lists(_ count: Int, from first: Int64 = -1) -> ChangeSet {
        let ids = (0..<Int64(count)).map { first - $0 }
        let records = ids.map { WireRecord(id: $0, present: FieldMask.all(count: 1), values: [.text("list \($0)")]) }
        return ChangeSet(entities: [EntityChanges(entity: "lists", create: ids, records: records)])
    }

    static func renames(_ ids: ClosedRange<Int64>, at revision: Int64) -> ChangeSet {
        let records = ids.map { WireRecord(id: $0, present: FieldMask.all(count: 1), values: [.text("renamed \($0)")], revision: revision) }
        return ChangeSet(entities: [EntityChanges(entity: "lists", update: Array(ids), records: records)])
    }

    /// Runs the four requests on `server` over `counting`, with `statements` reading the
    /// PostgreSQL statement count.
    static func measure(_ server: RevisionServer, _ counting: CountingStorage, statements: () -> Int?) async throws -> Costs {
        var request = 0
        func cost(_ changeSets: [ChangeSet], maxRevision: Int64) async throws -> Cost {
            request += 1
            counting.reset()
            let before = statements()
            let start = Date()
            let response = try await server.handle(SyncRequest(
                maxRevision: maxRevision, changeSets: changeSets, clientID: "counter", requestID: "r\(request)"))
            let seconds = Date().timeIntervalSince(start)
            #expect(response.changeSets.allSatisfy { $0.conflict != true })
            // Whatever the number of records in a change set, a handful of reads.
            #expect(reads(counting) <= 12 + 3 * changeSets.count, "\(counting.calls)")
            return Cost(calls: counting.total, statements: statements().flatMap { after in before.map { after - $0 } }, seconds: seconds)
        }
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [lists(1)]))
        let oneCreate = try await cost([lists(1)], maxRevision: 0)
        let thousandCreates = try await cost([lists(1_000)], maxRevision: 2)
        let thousandChangeSets = try await cost((0..<1_000).map { _ in lists(1) }, maxRevision: 3)
        // Lists 3...1002 were created at revision 3.
        let thousandUpdates = try await cost([renames(3...1_002, at: 3)], maxRevision: 1_003)
        return Costs(oneCreate: oneCreate, thousandCreates: thousandCreates, thousandChangeSets: thousandChangeSets, thousandUpdates: thousandUpdates)
    }

    /// Storage calls other than the record writes and deletes (which a storage may hold and
    /// send together: PostgreSQL does).
    static func reads(_ counting: CountingStorage) -> Int {
        counting.total - (counting.calls["write"] ?? 0) - (counting.calls["delete"] ?? 0)
    }

    static func report(_ name: String, _ costs: Costs) {
        print("\(name): one create + catch-up: \(costs.oneCreate); 1,000 creates in one change set: \(costs.thousandCreates); "
            + "1,000 one-record change sets: \(costs.thousandChangeSets); 1,000 updates in one change set: \(costs.thousandUpdates)")
    }

    @Test func sqlite_requestCosts() async throws {
        let server = try await RevisionServer(storage: CountingStorage(try SQLiteServerStorage()), schema: try postgresSchema())
        let counting = try #require(server.unsafeStorage as? CountingStorage)
        let costs = try await Self.measure(server, counting) { nil }
        Self.report("SQLite", costs)
    }

    @Test(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set"), arguments: PostgresWriteOrder.allCases)
    func postgres_requestCosts(order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await RevisionServer(
                storage: CountingStorage(try PostgresServerStorage(database.connector(), order: order)), schema: try postgresSchema(),
                wall: ManualWallClock(milliseconds: 1_000_000))
            let counting = try #require(server.unsafeStorage as? CountingStorage)
            let postgres = try #require(counting.base as? PostgresServerStorage)
            let costs = try await Self.measure(server, counting) { postgres.statementCount }
            Self.report("PostgreSQL, \(order)", costs)
            // Round trips do not grow with the records of a change set (they were 14, 2,010,
            // 4,008 and 2,010 with a statement per record and per question), nor with the
            // change sets of a request whose change sets read nothing (4 each when every
            // change set sent its savepoint, ids, write and release). The id counters go
            // with the state's save, the reply's pruning with its store (13 before), and the
            // log's bounds name the entities of a page that ends at the data set's revision,
            // the rows still held when the reply is stored go in its statement, and the
            // stored-reply lookup reads the catch-up's log bounds with it; a change set's
            // savepoint is released without sending the rows it holds.
            // Writes in parallel add one: the reservation before BEGIN and the watermark's read
            // after it where the lock took one statement, and the in-flight rows' removal.
            let more = order == .parallel ? 1 : 0
            #expect(costs.oneCreate.statements! <= 8 + more)
            #expect(costs.thousandCreates.statements! <= 7 + more)
            #expect(costs.thousandChangeSets.statements! <= 7 + more)
            #expect(costs.thousandUpdates.statements! <= 9 + more)
        }
    }
}
