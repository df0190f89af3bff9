import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// The scope holdings beside the revision, and the kept-aside table across rollbacks,
/// reopening, older files and schema migrations (Specs/store.md, "Leaving a scope").
@Suite struct StoreScopeStateTests {
    typealias Leave = StoreLeaveTests
    struct Boom: Error {}

    static func fileStore(_ path: String, schema: Schema? = nil) throws -> Store {
        try Store(.file(path: path), schema: schema ?? storeSchema(), replica: ReplicaID(1), wall: ManualWallClock(milliseconds: 1_000_000))
    }

    @Test func theHoldingsAreWrittenWithTheRevision_andReadBackWhenTheStoreOpens() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        var store = try Self.fileStore(path)
        #expect(store.scopeState == nil)
        try store.apply(Leave.leaving([], revision: 3, scopes: "project=1,2"))
        #expect(store.scopeState == "project=1,2")
        // Changes without a revision (not a response) leave both as they are.
        try store.apply(ServerChanges(records: [Leave.list(1, "Home", revision: 3)]))
        #expect(store.scopeState == "project=1,2" && store.maxRevision == 3)
        store.close()
        store = try Self.fileStore(path)
        #expect(store.scopeState == "project=1,2" && store.maxRevision == 3)
        // A response without holdings (a server without scopes) clears them.
        try store.apply(Leave.leaving([], revision: 4, scopes: nil))
        #expect(store.scopeState == nil)
        store.close()
        store = try Self.fileStore(path)
        #expect(store.scopeState == nil && store.maxRevision == 4)
        store.close()
    }

    @Test func aFailureBeforeCommit_rollsBackTheLeaveTheKeptChangeAndTheHoldingsTogether() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        var store = try Self.fileStore(path)
        try Leave.seed(store, scopes: "project=1")
        _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
        #expect(throws: StoreError.self) {
            try store.apply(Leave.leaving([("lists", 1), ("tasks", 1)], scopes: "project=2")) { throw Boom() }
        }
        #expect(store.scopeState == "project=1" && store.maxRevision == 1)
        #expect(try store.record("lists", id: 1) != nil)
        #expect(try store.pendingFields("tasks", id: 1) == FieldMask([0]))
        #expect(try store.keptAside().isEmpty)
        #expect(try store.outboxCount() == 1)
        store.close()
        store = try Self.fileStore(path)
        #expect(store.scopeState == "project=1" && store.maxRevision == 1)
        #expect(try store.keptAside().isEmpty)
        // Applied for real, all of it happens.
        try store.apply(Leave.leaving([("lists", 1), ("tasks", 1)], scopes: "project=2"))
        #expect(store.scopeState == "project=2" && store.maxRevision == 2)
        #expect(try store.record("lists", id: 1) == nil)
        #expect(try store.keptAside().map(\.id) == [1])
        store.close()
    }

    @Test func aStoreFileFromBeforeScopes_opensReadOnlyAndWritable_andGetsTheTable() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        var store = try Self.fileStore(path)
        try Leave.seed(store)
        let local = try store.insert("tasks", values: ["Bread", false, 0, .integer(1)])
        // As a store made before this change left its file: no `__fm_aside`, no `scopes` key.
        try store.database.execute("DROP TABLE \"__fm_aside\"; DELETE FROM \"__fm_state\" WHERE \"key\" = 'scopes'")
        store.close()

        let reader = try StoreReader(path: path, schema: storeSchema())
        let (kept, unsynced) = try await reader.read { store in (try store.keptAside(), try store.unsyncedChanges().count) }
        #expect(kept.isEmpty && unsynced == 1)
        await reader.close()

        store = try Self.fileStore(path)
        #expect(store.scopeState == nil && store.maxRevision == 1)
        #expect(try store.database.scalar("SELECT value FROM __fm_state WHERE key = 'format'") == .integer(1))
        try store.apply(Leave.leaving([("lists", 1)], scopes: ""))
        #expect(try store.keptAside().map(\.id) == [local])
        #expect(store.scopeState == "")
        store.close()
    }

    @Test func keptChangesFollowTheSchemaWhenTheStoreMigrates() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        let v1 = try Schema([
            Entity("lists", fields: [Field("name", .text)]),
            Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))]),
        ])
        var store = try Self.fileStore(path, schema: v1)
        let server = Leave.server
        try store.apply(ServerChanges(records: [
            AcknowledgedRecord(Record(entity: "lists", id: 1, values: ["Home"], stamps: [server]), revision: 1),
            AcknowledgedRecord(Record(entity: "tasks", id: 1, values: ["Milk", .integer(1)], stamps: [server, server]), revision: 1),
        ], maxRevision: 1))
        _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
        try store.apply(Leave.leaving([("lists", 1), ("tasks", 1)]))
        store.close()

        let v2 = try Schema([
            Entity("lists", fields: [Field("name", .text)]),
            Entity("tasks", fields: [
                Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade)),
                Field("minutes", .integer, strategy: .counter, default: .integer(0)),
            ]),
        ], version: 2)
        store = try Self.fileStore(path, schema: v2)
        let kept = try #require(try store.keptAside().first)
        #expect(kept.record.values == ["Oat milk", .integer(1), .integer(0)])
        #expect(kept.ancestor?.values == ["Milk", .integer(1), .integer(0)])
        #expect(kept.fields == FieldMask([0]))
        store.close()
    }

    @Test func resettingTheStore_dropsTheHoldingsAndTheKeptChanges() throws {
        let store = try memoryStore()
        try Leave.seed(store, scopes: "project=1")
        _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
        try store.apply(Leave.leaving([("tasks", 1)], scopes: "project=1"))
        #expect(try store.keptAside().count == 1)
        try store.resetToEmpty()
        #expect(store.scopeState == nil && store.maxRevision == 0)
        #expect(try store.keptAside().isEmpty)
        #expect(try store.database.scalar("SELECT count(*) FROM __fm_state WHERE key = 'scopes'") == .integer(0))
    }
}
