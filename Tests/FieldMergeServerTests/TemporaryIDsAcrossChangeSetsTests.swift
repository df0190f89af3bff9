import FieldMerge
import FieldMergeSQLiteDriver
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Temporary ids given in one change set resolve in the later change sets of the request;
/// a change set that fails gives none.
@Suite struct TemporaryIDsAcrossChangeSetsTests {
    @Test func laterChangeSetsSeeEarlierIDsAndNoneOfAFailedOne() async throws {
        let schema = try caseStudySchema()
        let screens = schema.entity("screens")!, instances = schema.entity("screen_instances")!
        let server = try RevisionServer(.memory, schema: schema, wall: ManualWallClock(milliseconds: 1_700_000_000_000))
        let request = SyncRequest(maxRevision: 0, changeSets: [
            // 1: screen -1.
            ChangeSet(entities: [changes("screens", create: [wire(screens, -1, ["name": "first"])], schema: schema)]),
            // 2: screen -2 and an update of a screen that does not exist: a conflict, rolled back.
            ChangeSet(entities: [changes("screens", create: [wire(screens, -2, ["name": "lost"])],
                                         update: [wire(screens, 77, ["name": "nobody"], revision: 3)], schema: schema)]),
            // 3: an instance of screen -1 (given in 1).
            ChangeSet(entities: [changes("screen_instances", create: [wire(instances, -3, ["screen_id": -1, "comment": "of first"])], schema: schema)]),
            // 4: an instance of screen -2, which change set 2 never gave: refused.
            ChangeSet(entities: [changes("screen_instances", create: [wire(instances, -4, ["screen_id": -2, "comment": "of lost"])], schema: schema)]),
        ])
        let response = try await server.handle(request)
        #expect(response.changeSets.map(\.conflict) == [false, true, false, true])
        let screen = try #require(response.changeSets[0].entities.first?.records.first)
        #expect(screen.oldID == -1)
        let instance = try #require(response.changeSets[2].entities.first?.records.first)
        #expect(instance.values[0] == .integer(screen.id))
        #expect(try server.database.scalar("SELECT count(*) FROM screens") == .integer(1))
        #expect(try server.database.scalar("SELECT screen_id FROM screen_instances") == .integer(screen.id))
        #expect(try server.database.scalar("SELECT count(*) FROM screen_instances") == .integer(1))
    }
}
