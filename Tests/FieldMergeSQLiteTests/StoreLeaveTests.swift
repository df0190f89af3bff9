import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// Records leaving what the device may hold (Specs/store.md, "Leaving a scope"): removed in
/// the transaction that applies the response, with what references them, their unsynced
/// changes kept aside, nothing sent.
@Suite struct StoreLeaveTests {
    static let server = Stamp(milliseconds: 900_000, replica: ReplicaID(99))

    static func list(_ id: Int64, _ name: String, revision: Int64 = 1) -> AcknowledgedRecord {
        AcknowledgedRecord(Record(entity: "lists", id: id, values: [.text(name)], stamps: [server]), revision: revision)
    }

    static func task(_ id: Int64, _ title: String, list: Int64, revision: Int64 = 1) -> AcknowledgedRecord {
        AcknowledgedRecord(Record(
            entity: "tasks", id: id, values: [.text(title), false, 0, .integer(list)], stamps: ContiguousArray(repeating: server, count: 4)),
            revision: revision)
    }

    /// Lists 1 and 2; tasks 1...4 in list 1 and 5 in list 2; a note on task 1 (setNull) and a
    /// pin on task 2 (restrict); all acknowledged at revision 1.
    static func seed(_ store: Store, scopes: String? = nil) throws {
        var changes = ServerChanges(records: [
            list(1, "Home"), list(2, "Work"),
            task(1, "Milk", list: 1), task(2, "Eggs", list: 1), task(3, "Jam", list: 1), task(4, "Tea", list: 1), task(5, "Mail", list: 2),
            AcknowledgedRecord(Record(entity: "notes", id: 1, values: ["cold", .integer(1)], stamps: [server, server]), revision: 1),
            AcknowledgedRecord(Record(entity: "pins", id: 1, values: [.integer(2)], stamps: [server]), revision: 1),
        ], maxRevision: 1)
        changes.scopeState = scopes
        try store.apply(changes)
    }

    static func leaving(_ left: [(String, Int64)], revision: Int64 = 2, scopes: String? = nil) -> ServerChanges {
        var changes = ServerChanges(maxRevision: revision)
        changes.left = left.map { (entity: $0.0, id: $0.1) }
        changes.scopeState = scopes
        return changes
    }

    static func ids(_ store: Store, _ table: String) throws -> [Int64] {
        try store.database.rows("SELECT id FROM \(table) ORDER BY id").map { row in
            guard case .integer(let id) = row[0] else { return 0 }
            return id
        }
    }

    static func count(_ store: Store, _ table: String) throws -> SQLValue? {
        try store.database.scalar("SELECT count(*) FROM \"\(table)\"")
    }

    final class Feed { var changes: [StoreChange] = [] }

    @Test func aLeaveRemovesTheRecordAndEveryLocalRecordReferencingIt_whateverItsDeleteRule() throws {
        let store = try memoryStore()
        try Self.seed(store)
        let local = try store.insert("tasks", values: ["Bread", false, 0, .integer(1)])
        let feed = Feed()
        store.onChange = { feed.changes.append($0) }
        // The server names the list and one task; the device finds the rest itself.
        try store.apply(Self.leaving([("lists", 1), ("tasks", 1)]))
        #expect(try Self.ids(store, "lists") == [2])
        #expect(try Self.ids(store, "tasks") == [5])
        #expect(try Self.ids(store, "notes") == [])  // setNull, removed all the same
        #expect(try Self.ids(store, "pins") == [])   // restrict, removed all the same
        #expect(try store.record("tasks", id: local) == nil)
        #expect(try store.outboxCount() == 0)
        #expect(try store.pendingChanges().isEmpty)
        #expect(try Self.count(store, "__fm_tombstones") == .integer(0))
        #expect(store.maxRevision == 2)
        #expect(try store.keptAside().map { "\($0.entity)#\($0.id) \($0.kind)" } == ["tasks#\(local) create"])
        let change = try #require(feed.changes.last)
        #expect(change.origin == .sync)
        #expect(change.left == ["lists": [1], "tasks": [local, 1, 2, 3, 4], "notes": [1], "pins": [1]])
        #expect(change.deleted.isEmpty && change.updated.isEmpty && change.inserted.isEmpty)
    }

    @Test func unsyncedChangesOfLeavingRecords_areKeptAside_listedAsOutOfScope_andNeverSent() throws {
        let store = try memoryStore()
        try Self.seed(store)
        _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
        try store.delete("tasks", id: 3)
        let local = try store.insert("tasks", values: ["Bread", false, 0, .integer(1)])
        _ = try store.update("tasks", id: 4, ["done": true])
        try store.park("tasks", id: 4, code: "unauthorized", message: "not yours")
        try store.apply(Self.leaving([("lists", 1), ("tasks", 1), ("tasks", 2), ("tasks", 3), ("tasks", 4)]))

        let kept = try store.keptAside().sorted { $0.id < $1.id }
        #expect(kept.map { "\($0.entity)#\($0.id) \($0.kind)" } == ["tasks#\(local) create", "tasks#1 update", "tasks#3 delete", "tasks#4 update"])
        #expect(kept[0].fields == FieldMask.all(count: 4) && kept[0].ancestor == nil && kept[0].revision == nil)
        #expect(kept[0].record.values == ["Bread", false, 0, .integer(1)])
        #expect(kept[1].fields == FieldMask([0]) && kept[1].record.values[0] == "Oat milk")
        #expect(kept[1].ancestor?.values[0] == "Milk" && kept[1].revision == 1)
        #expect(kept[2].record.isDeleted && kept[2].ancestor?.values[0] == "Jam" && kept[2].revision == 1)
        #expect(kept[3].fields == FieldMask([1]) && kept[3].record.values[1] == true)
        #expect(kept.allSatisfy { $0.since == 1_000_000 })

        let unsynced = try store.unsyncedChanges()
        #expect(unsynced.count == 4)
        #expect(unsynced.allSatisfy { $0.refusal?.code == "outOfScope" && $0.refusal?.message == KeptAside.message })
        // Nothing of them is sent: no outbox entry, no tombstone, no refused change left.
        #expect(try store.pendingChanges(includingParked: true).isEmpty)
        #expect(try store.outboxCount() == 0)
        #expect(try Self.count(store, "__fm_tombstones") == .integer(0))
        #expect(try Self.count(store, "__fm_parked") == .integer(0))

        try store.discard("tasks", id: 1)
        #expect(try store.keptAside().map(\.id).sorted() == [local, 3, 4])
        #expect(throws: StoreError.self) { try store.discard("tasks", id: 1) }
        try store.discard("tasks", id: local)
        try store.discard("tasks", id: 3)
        try store.discard("tasks", id: 4)
        #expect(try store.keptAside().isEmpty && store.unsyncedChanges().isEmpty)
    }

    @Test func aRecordThatComesBack_leavesItsKeptChangeAsideUntilDiscarded() throws {
        let store = try memoryStore()
        try Self.seed(store)
        _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
        try store.apply(Self.leaving([("tasks", 1)]))
        var back = ServerChanges(records: [Self.task(1, "Milk", list: 1, revision: 3)], maxRevision: 3)
        back.created = ["tasks": [1]]
        try store.apply(back)
        #expect(try store.record("tasks", id: 1)?.values[0] == "Milk")
        #expect(try store.pendingChanges().isEmpty)
        #expect(try store.keptAside().map { $0.record.values[0] } == ["Oat milk"])
        // Edited and gone again: a second entry, the first one kept.
        _ = try store.update("tasks", id: 1, ["title": "Soy milk"])
        try store.apply(Self.leaving([("tasks", 1)], revision: 4))
        #expect(try store.keptAside().map { $0.record.values[0] } == ["Oat milk", "Soy milk"])
        try store.discard("tasks", id: 1)
        #expect(try store.keptAside().isEmpty)
    }

    @Test func aLeaveOfAnIdTheStoreDoesNotHave_isIgnored() throws {
        let store = try memoryStore()
        try Self.seed(store)
        let before = try ["lists", "tasks", "notes", "pins"].map { try Self.ids(store, $0) }
        let feed = Feed()
        store.onChange = { feed.changes.append($0) }
        try store.apply(Self.leaving([("lists", 99), ("tasks", 42)], revision: 5))
        #expect(try ["lists", "tasks", "notes", "pins"].map { try Self.ids(store, $0) } == before)
        #expect(store.maxRevision == 5)
        #expect(try store.keptAside().isEmpty)
        #expect(feed.changes.allSatisfy { $0.left.isEmpty })
    }

    @Test func manyLeavesAtOnce_removeEverything_andPlainSQLIsCapturedAfterwards() throws {
        let store = try memoryStore()
        let lists = (1...600).map { Self.list(Int64($0), "list \($0)") }
        try store.apply(ServerChanges(records: lists + [Self.task(1, "Milk", list: 600)], maxRevision: 1))
        let local = try store.insert("tasks", values: ["Bread", false, 0, .integer(599)])
        try store.apply(Self.leaving((1...600).map { ("lists", Int64($0)) }))
        #expect(try Self.ids(store, "lists") == [] && Self.ids(store, "tasks") == [])
        #expect(try store.keptAside().map(\.id) == [local])
        // The capture triggers are back: a plain-SQL insert becomes a pending create.
        try store.database.execute("INSERT INTO lists (name) VALUES ('typed by hand')")
        try store.captureExternalWrites()
        #expect(try store.pendingChanges().map(\.kind) == [.create])
    }

    @Test func aRecordTheResponseUpdatesAndLeaves_isReportedAsLeftOnly() throws {
        let store = try memoryStore()
        try Self.seed(store)
        let feed = Feed()
        store.onChange = { feed.changes.append($0) }
        var changes = Self.leaving([("tasks", 5)])
        changes.records = [Self.task(5, "Post", list: 2, revision: 2), Self.list(2, "Office", revision: 2)]
        try store.apply(changes)
        #expect(try Self.ids(store, "tasks") == [1, 2, 3, 4])
        let change = try #require(feed.changes.last)
        #expect(change.left == ["tasks": [5]])
        #expect(change.updated == ["lists": [2]])
    }
}
