import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// A record the server sends alive (another device's edit that a merge kept, `editWins`) under
/// a parent this device deleted and has not had acknowledged: it follows the reference's
/// `onDelete` as if the delete were made after it arrived. Before, the apply failed at COMMIT
/// on the foreign key, in every sync after (found by `fieldmerge simulate --live`).
@Suite struct StoreApplyUnderALocalDeleteTests {
    static let server = Stamp(clock: 10, replica: ReplicaID(2))

    static func seeded() throws -> (Store, task: Record) {
        let store = try memoryStore()
        let s = server
        let list = Record(entity: "lists", id: 1, values: ["L"], stamps: [s])
        let task = Record(entity: "tasks", id: 2, values: ["T", false, 0, 1], stamps: [s, s, s, s])
        let note = Record(entity: "notes", id: 3, values: ["N", 2], stamps: [s, s])
        try store.apply(ServerChanges(records: [list, task, note].map { AcknowledgedRecord($0, revision: 1) }, maxRevision: 1))
        return (store, task)
    }

    @Test func aCascadeChildSentAlive_isDeletedAgainWithItsParent() throws {
        let (store, task) = try Self.seeded()
        try store.delete("lists", id: 1)  // the task cascades; the note's reference is nulled
        var edited = task
        edited.set(0, "T, edited elsewhere", stamp: Stamp(clock: 20, replica: ReplicaID(3)))
        try store.apply(ServerChanges(records: [AcknowledgedRecord(edited, revision: 2)], maxRevision: 2))
        // Both are deleted here (a tombstone, no row), and both deletes wait to be sent.
        #expect(try store.record("tasks", id: 2)?.isDeleted == true)
        #expect(try store.record("lists", id: 1)?.isDeleted == true)
        #expect(try store.database.rows("SELECT count(*) FROM tasks") == [[.integer(0)]])
        let pending = try store.pendingChanges()
        #expect(pending.contains { $0.entity == "tasks" && $0.id == 2 && $0.kind == .delete })
        #expect(pending.contains { $0.entity == "lists" && $0.id == 1 && $0.kind == .delete })
        #expect(store.maxRevision == 2)
    }

    @Test func aSetNullChildSentAlive_losesTheReferenceAgain() throws {
        let (store, _) = try Self.seeded()
        try store.delete("tasks", id: 2)  // the note's reference to it is nulled here
        let edited = Record(entity: "notes", id: 3, values: ["N, edited elsewhere", 2], stamps: [Stamp(clock: 20, replica: ReplicaID(3)), Self.server])
        try store.apply(ServerChanges(records: [AcknowledgedRecord(edited, revision: 2)], maxRevision: 2))
        let note = try #require(try store.record("notes", id: 3))
        #expect(note.values == ["N, edited elsewhere", .null])
        #expect(try store.pendingChanges().contains { $0.entity == "notes" && $0.id == 3 && $0.kind == .update })
    }

    @Test func aParentThatStillExists_leavesTheChildAlone() throws {
        let (store, task) = try Self.seeded()
        var edited = task
        edited.set(0, "T2", stamp: Stamp(clock: 20, replica: ReplicaID(3)))
        try store.apply(ServerChanges(records: [AcknowledgedRecord(edited, revision: 2)], maxRevision: 2))
        #expect(try store.record("tasks", id: 2)?.values[0] == "T2")
        #expect(try store.pendingChanges().isEmpty)
    }
}
