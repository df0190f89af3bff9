import FieldMerge
import FieldMergeSQLiteDriver
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

@Suite struct RevisionServerTests {
    let schema: Schema
    let screens: Entity, instances: Entity, items: Entity

    init() throws {
        schema = try caseStudySchema()
        screens = schema.entity("screens")!
        instances = schema.entity("screen_instances")!
        items = schema.entity("screen_instance_items")!
    }

    /// A server at revision 1000: screens 1...1000, one per revision.
    func serverAt1000() async throws -> RevisionServer {
        let server = try RevisionServer(.memory, schema: schema, wall: ManualWallClock(milliseconds: 1_700_000_000_000))
        for n in 1...1000 {
            let request = SyncRequest(maxRevision: Int64(n - 1), changeSets: [ChangeSet(entities: [
                changes("screens", create: [wire(screens, -1, ["name": .text("screen \(n)")])], schema: schema),
            ], conflict: nil)], clientID: nil, requestID: nil, limit: 1)
            _ = try await server.handle(request)
        }
        // The case study's server had handed out ids up to 320 and 411 before.
        try server.database.execute("""
            INSERT INTO "__fm_ids" VALUES ('screen_instances', 321), ('screen_instance_items', 412)
            """)
        return server
    }

    func caseStudyRequest(maxRevision: Int64) -> SyncRequest {
        SyncRequest(maxRevision: maxRevision, changeSets: [ChangeSet(entities: [
            changes("screen_instances", create: [wire(instances, -10, ["screen_id": 749, "date": .date(1_391_256_923_487), "comment": ""])], schema: schema),
            changes("screen_instance_items", create: [
                wire(items, -11, ["screen_instance_id": -10, "numeric_value": 2]),
                wire(items, -12, ["screen_instance_id": -10, "numeric_value": 5]),
            ], schema: schema),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil)
    }

    @Test func caseStudy_createsGetPermanentIdsAndForeignKeysFollow() async throws {
        let server = try await serverAt1000()
        let response = try await server.handle(caseStudyRequest(maxRevision: 1000))
        #expect(response.maxRevision == 1001 && !response.hasMore)
        #expect(response.changeSets.count == 1)
        let answer = try #require(response.changeSets.first)
        #expect(answer.conflict == false)
        #expect(answer.entities.map(\.entity) == ["screen_instances", "screen_instance_items"])
        #expect(answer.entities[0].create == [321])
        #expect(answer.entities[0].records.first?.oldID == -10 && answer.entities[0].records.first?.revision == 1001)
        #expect(answer.entities[1].create == [412, 413])
        #expect(answer.entities[1].records.map(\.oldID) == [-11, -12])
        #expect(answer.entities[1].records.map { $0.values[0] } == [321, 321])
    }

    @Test func caseStudy_staleClientCatchesUpFrom995ThenGets1001() async throws {
        let server = try await serverAt1000()
        let response = try await server.handle(caseStudyRequest(maxRevision: 995))
        #expect(response.maxRevision == 1001)
        #expect(response.changeSets.count == 2)
        let missed = response.changeSets[0]
        #expect(missed.entities.map(\.entity) == ["screens"])
        #expect(missed.entities[0].create == [996, 997, 998, 999, 1000])
        #expect(missed.entities[0].records.map(\.revision) == [996, 997, 998, 999, 1000])
        #expect(response.changeSets[1].conflict == false)
        #expect(response.changeSets[1].entities[0].create == [321])
    }

    @Test func staleUpdate_isAConflictAnsweredWithTheTruthAndRolledBack() async throws {
        let server = try await serverAt1000()
        // Screen 5 was created at revision 5; someone updates it at 1001.
        _ = try await server.handle(SyncRequest(maxRevision: 1000, changeSets: [ChangeSet(entities: [
            changes("screens", update: [wire(screens, 5, ["name": "renamed"], revision: 5)], schema: schema),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil))
        // A client that still holds revision 5 edits it, and creates an instance in the same change set.
        let stale = SyncRequest(maxRevision: 1000, changeSets: [ChangeSet(entities: [
            changes("screens", update: [wire(screens, 5, ["name": "mine"], revision: 5)], schema: schema),
            changes("screen_instances", create: [wire(instances, -1, ["screen_id": 5, "comment": "child"])], schema: schema),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil)
        let response = try await server.handle(stale)
        let answer = try #require(response.changeSets.last)
        #expect(answer.conflict == true)
        #expect(answer.entities.first?.update == [5])
        #expect(answer.entities.first?.records.first?.values[0] == "renamed")
        #expect(answer.entities.first?.records.first?.revision == 1001)
        #expect(await server.maxRevision == 1001)
        #expect(try server.database.scalar("SELECT count(*) FROM screen_instances") == .integer(0))
    }

    @Test func delete_cascadesAndIsReportedPerRecord() async throws {
        let server = try await serverAt1000()
        _ = try await server.handle(caseStudyRequest(maxRevision: 1000))
        let response = try await server.handle(SyncRequest(maxRevision: 1001, changeSets: [ChangeSet(entities: [
            changes("screen_instances", delete: [(321, 1001)], schema: schema),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil))
        let answer = try #require(response.changeSets.last)
        #expect(answer.conflict == false)
        let deleted = Dictionary(uniqueKeysWithValues: answer.entities.map { ($0.entity, $0.delete) })
        #expect(deleted["screen_instances"] == [321])
        #expect(deleted["screen_instance_items"]?.sorted() == [412, 413])
        #expect(try server.database.scalar("SELECT count(*) FROM screen_instance_items") == .integer(0))
    }

    @Test func refusedDelete_restoresTheCascadedRecordsInTheTruth() async throws {
        let restricted = try caseStudySchema(restrictItems: true)
        let server = try RevisionServer(.memory, schema: restricted)
        let create = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            changes("screens", create: [wire(screens, -1, ["name": "s"])], schema: restricted),
            changes("screen_instances", create: [wire(instances, -2, ["screen_id": -1])], schema: restricted),
            changes("screen_instance_items", create: [wire(items, -3, ["screen_instance_id": -2])], schema: restricted),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil))
        #expect(create.changeSets.last?.conflict == false)
        // Deleting the screen cascades to its instance, whose item restricts: all rolled back.
        let response = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [ChangeSet(entities: [
            changes("screens", delete: [(1, 1)], schema: restricted),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil))
        let answer = try #require(response.changeSets.last)
        #expect(answer.conflict == true)
        let truth = Dictionary(uniqueKeysWithValues: answer.entities.map { ($0.entity, $0.update) })
        #expect(truth["screens"] == [1])
        #expect(truth["screen_instances"] == [1])
        #expect(truth["screen_instance_items"] == [1])
        #expect(try server.database.scalar("SELECT count(*) FROM screen_instances") == .integer(1))
        #expect(await server.maxRevision == 1)
    }

    @Test func authorizationRefusal_isAConflict() async throws {
        var options = RevisionServer.Options()
        options.authorize = { change in !(change.entity == "screens" && change.kind == .delete) }
        let server = try RevisionServer(.memory, schema: schema, options: options)
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            changes("screens", create: [wire(screens, -1, ["name": "keep"])], schema: schema),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil))
        let response = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [ChangeSet(entities: [
            changes("screens", delete: [(1, 1)], schema: schema),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil))
        #expect(response.changeSets.last?.conflict == true)
        #expect(try server.database.scalar("SELECT count(*) FROM screens") == .integer(1))
    }

    @Test func offlineFor10000Revisions_catchesUpInPagesOnRevisionBoundaries() async throws {
        let server = try RevisionServer(.memory, schema: schema)
        for n in 0..<10_000 {
            _ = try await server.handle(SyncRequest(maxRevision: Int64(n), changeSets: [ChangeSet(entities: [
                changes("screens", create: [wire(screens, -1, ["name": .text("s\(n)")])], schema: schema),
            ], conflict: nil)], clientID: nil, requestID: nil, limit: 1))
        }
        var revision: Int64 = 0, received = 0, pages = 0
        while true {
            let response = try await server.handle(SyncRequest(maxRevision: revision, changeSets: [], clientID: nil, requestID: nil, limit: 1_000))
            received += response.changeSets.reduce(0) { $0 + $1.entities.reduce(0) { $0 + $1.records.count } }
            revision = response.maxRevision
            pages += 1
            if !response.hasMore { break }
        }
        #expect(received == 10_000 && revision == 10_000 && pages == 10)
    }

    @Test func stampsFromAFastClock_areClamped() async throws {
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let server = try RevisionServer(.memory, schema: schema, wall: wall)
        let aYearAhead = Stamp(milliseconds: 1_000_000 + 31_536_000_000, replica: ReplicaID(7))
        let response = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            changes("screens", create: [wire(screens, -1, ["name": "fast"], stamp: aYearAhead)], schema: schema),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil))
        let stamp = try #require(response.changeSets.last?.entities.first?.records.first?.stamps?.first)
        #expect(stamp.milliseconds <= 1_000_000 + 60_000 && stamp.replica == ReplicaID(7))
    }

    @Test func unknownEntity_isABadRequestAndChangesNothing() async throws {
        let server = try RevisionServer(.memory, schema: schema)
        let request = SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            EntityChanges(entity: "nope", create: [], update: [], delete: [], records: []),
        ], conflict: nil)], clientID: nil, requestID: nil, limit: nil)
        let error = await #expect(throws: ServerError.self) { try await server.handle(request) }
        #expect(error?.code == .badRequest)
        #expect(await server.maxRevision == 0)
    }
}
