import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import FieldMergeTestSupport
import PostgresNIO
import Testing

/// Scoped writes with writes in parallel: a record created under a parent that a write beside
/// it moves to another root ends in the parent's new root (Specs/http.md §8, "Writes in
/// parallel"; Specs/scopes.md).
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct ParallelScopedWriteTests {
    @Test func aNoteCreatedUnderATaskMovedBesideIt_endsInTheTasksNewProject() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(TeamApp.schema, scopes: TeamApp.rules, order: .parallel)
            let b = try await database.server(TeamApp.schema, replica: ReplicaID(0x5E_5F), scopes: TeamApp.rules, order: .parallel)
            let admin = try await ScopeScenario.seed(a)
            let (task, note, cursor) = (admin.records["tasks#1"]!.revision!, admin.records["notes#2"]!.revision!, admin.maxRevision)
            // The move locks task 1, then waits for note 2, which another session holds.
            let move = Send.changeSet(
                Send.update("tasks", 1, revision: task, field: 1, .integer(2), width: 2),
                Send.update("notes", 2, revision: note, field: 0, .text("edited"), width: 2))
            let create = Send.changeSet(Send.create("notes", -1, [.text("new"), .integer(1)]))
            let (moved, created) = try await ParallelWriteTests.holdingList(2, in: "notes", of: database) { connection, log in
                let moving = Task { try await a.handle(SyncRequest(maxRevision: cursor, changeSets: [move]), identity: TeamApp.admin) }
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                // The note's parent is task 1, which the move holds: the create waits for it.
                let creating = Task { try await b.handle(SyncRequest(maxRevision: cursor, changeSets: [create]), identity: TeamApp.admin) }
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log, count: 2)
                return { (try await moving.value, try await creating.value) }
            }
            #expect(moved.changeSets.last?.conflict == false)
            #expect(created.changeSets.last?.conflict == false)
            let id = try #require(created.changeSets.last?.entities.first?.create.first)
            let root = try await database.count("SELECT \"__fm_root\" FROM \"\(database.url.schema)\".\"notes\" WHERE \"id\" = $1", id)
            #expect(root == 2, "the new note's root is \(root.map(String.init) ?? "none"), its task's is 2")
            // Project 2's member is sent it; project 1's is not.
            var bob = ScopedDevice(TeamApp.bob), ann = ScopedDevice(TeamApp.ann)
            try await bob.sync(a)
            try await ann.sync(a)
            #expect(bob.ids("notes").contains(id))
            #expect(!ann.ids("notes").contains(id))
        }
    }
}
