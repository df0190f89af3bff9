import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeServerPostgres
import Testing

/// The batched storage calls answer what the single calls answer, id by id, on both
/// storages: missing ids, deleted ids, repeated ids, and lists longer than SQLite's limit of
/// parameters per statement (32,766).
struct BatchedStorageCallTests {
    /// Lists 1...`count` created, then every third of the first 30 deleted.
    static func seed(_ server: RevisionServer, count: Int) async throws {
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [RoundTripCountTests.lists(count)]))
        let deleted = (1...30).filter { $0 % 3 == 0 }.map(Int64.init)
        let records = deleted.map { WireRecord(id: $0, present: FieldMask(), values: [.null], revision: 1) }
        let response = try await server.handle(SyncRequest(
            maxRevision: 1, changeSets: [ChangeSet(entities: [EntityChanges(entity: "lists", delete: deleted, records: records)])]))
        #expect(response.changeSets.last?.conflict != true)
    }

    static func same(_ a: ServerRow?, _ b: ServerRow?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return a.record == b.record && a.revision == b.revision && a.created == b.created && a.fieldRevisions == b.fieldRevisions
            && a.root == b.root
    }

    /// Compares every batched call with the single calls on `ids`.
    static func check(_ storage: any ServerStorage, _ entity: ServerEntity, ids: [Int64]) async throws {
        try await storage.read {
            let rows = try await storage.rows(entity, ids: ids)
            let deletions = try await storage.deletions(entity, ids: ids)
            let existing = try await storage.existing(entity, ids: ids)
            let logged = try await storage.loggedRevisions(entity, ids: ids)
            var alive = 0, gone = 0
            for id in Set(ids) {
                let row = try await storage.row(entity, id: id)
                #expect(same(rows[id], row), "row \(id)")
                #expect(deletions[id] == (try await storage.deletion(entity, id: id)), "deletion \(id)")
                #expect(existing.contains(id) == (try await storage.exists(entity, id: id)), "exists \(id)")
                #expect(logged[id] == (try await storage.loggedRevision(entity, id: id)), "logged \(id)")
                if row != nil { alive += 1 }
                if deletions[id] != nil { gone += 1 }
            }
            #expect(rows.count == alive && existing.count == alive && deletions.count == gone && logged.count == alive + gone)
            #expect(try await storage.logged(entity, ids: ids, after: 1) == ids.filter { deletions[$0] != nil })
        }
    }

    static func checkAll(_ server: RevisionServer, count: Int) async throws {
        try await seed(server, count: count)
        let storage = server.unsafeStorage
        let lists = await server.entities[0]
        // Alive, deleted (3, 6, ...), missing (0, past the end, negative), repeated.
        let ids: [Int64] = [1, 2, 3, 3, 6, 1, 0, -4, Int64(count) + 1, 29, 30, 30]
        try await check(storage, lists, ids: ids)
        try await check(storage, lists, ids: [])
        try await check(storage, lists, ids: Array(1...Int64(count + 10)) + [5, 6])
        // Ids continue where the batch ended, with the single call and another batch.
        try await storage.write {
            let next = try await storage.nextIDs(lists, count: 3)
            #expect(next == [Int64(count) + 1, Int64(count) + 2, Int64(count) + 3])
            #expect(try await storage.nextID(lists) == Int64(count) + 4)
            #expect(try await storage.nextIDs(lists, count: 0) == [])
            #expect(try await storage.nextIDs(lists, count: 2) == [Int64(count) + 5, Int64(count) + 6])
        }
    }

    /// Without an id counter (a data set made before counters, or damaged), the next id
    /// starts after every id given, the deleted ones too: a tombstone's id is never given again.
    static func idsStartAfterTombstonesWithoutACounter(_ server: RevisionServer) async throws {
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [RoundTripCountTests.lists(5)]))
        let deleted: [Int64] = [4, 5]
        let records = deleted.map { WireRecord(id: $0, present: FieldMask(), values: [.null], revision: 1) }
        let response = try await server.handle(SyncRequest(
            maxRevision: 1, changeSets: [ChangeSet(entities: [EntityChanges(entity: "lists", delete: deleted, records: records)])]))
        #expect(response.changeSets.last?.conflict != true)
        let storage = try #require(server.unsafeStorage as? any TransferableServerStorage)
        let lists = await server.entities[0]
        try await storage.write {
            try await storage.clearTable(.ids)
            #expect(try await storage.nextID(lists) == 6)
            #expect(try await storage.nextIDs(lists, count: 2) == [7, 8])
        }
    }

    @Test func sqlite_idsStartAfterTombstonesWithoutACounter() async throws {
        let server = try await RevisionServer(storage: try SQLiteServerStorage(), schema: try postgresSchema())
        try await Self.idsStartAfterTombstonesWithoutACounter(server)
    }

    @Test(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set"))
    func postgres_idsStartAfterTombstonesWithoutACounter() async throws {
        try await PostgresTestDatabase.with { database in
            try await Self.idsStartAfterTombstonesWithoutACounter(try await database.server(try postgresSchema()))
        }
    }

    @Test func sqlite_batchedCallsAnswerAsTheSingleOnes() async throws {
        let server = try await RevisionServer(storage: try SQLiteServerStorage(), schema: try postgresSchema())
        try await Self.checkAll(server, count: 40_000)
    }

    @Test(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set"))
    func postgres_batchedCallsAnswerAsTheSingleOnes() async throws {
        try await PostgresTestDatabase.with { database in
            try await Self.checkAll(try await database.server(try postgresSchema()), count: 2_000)
        }
    }
}
