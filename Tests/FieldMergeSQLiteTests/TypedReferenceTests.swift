import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// `retry`, `discard` and `conflictHistory` naming records by their `StoredRecord` type.
@Suite struct TypedReferenceTests {
    struct NoteRecord: StoredRecord {
        var id: Int64 = 0
        var body = ""
        var taskID: Int64?
        static let table = RecordTable<NoteRecord>("notes", [
            .text("body", \.body), .reference("taskID", \.taskID, to: "tasks", onDelete: .setNull),
        ])
    }

    func parkedCount(_ store: Store) throws -> SQLValue? {
        try store.database.scalar("SELECT count(*) FROM \"__fm_parked\"")
    }

    @Test func retryAndDiscard_byType() throws {
        let store = try memoryStore()
        var list = TodoList(name: "Home")
        try store.insert(&list)
        try store.park("lists", id: list.id, code: "unauthorized", message: "no")
        #expect(try parkedCount(store) == .integer(1))
        // Another entity with that id has no refused change.
        let wrongType = #expect(throws: StoreError.self) { try store.retry(NoteRecord.self, id: list.id) }
        #expect(wrongType?.code == .recordNotFound)
        try store.retry(TodoList.self, id: list.id)
        #expect(try parkedCount(store) == .integer(0))
        #expect(throws: StoreError.self) { try store.retry(TodoList.self, id: list.id) }

        try store.park("lists", id: list.id, code: "unauthorized", message: "no")
        try store.discard(TodoList.self, id: list.id)  // a create never acknowledged: removed
        #expect(try store.fetch(TodoList.self, id: list.id) == nil)
        #expect(try store.pendingChanges().isEmpty)
    }

    @Test func conflictHistory_ofATypeAndOfOneRecord() throws {
        let store = try memoryStore()
        var conflicts = ConflictHistoryStoreTests.conflicts
        conflicts.append(FieldConflict(
            at: "notes", id: 2, kind: .field, field: "body", fieldIndex: 0, ancestor: .text("a"),
            ancestorStamp: Stamp(milliseconds: 1, replica: ReplicaID(1)), local: .text("b"),
            localStamp: Stamp(milliseconds: 7, replica: ReplicaID(1)), remote: .text("c"),
            remoteStamp: Stamp(milliseconds: 8, replica: ReplicaID(2)), strategy: "lastEditWins", winner: .remote,
            result: .text("c")))
        try store.apply({ var changes = ServerChanges(); changes.conflicts = conflicts; return changes }())
        #expect(try store.conflictHistory(of: TodoList.self).map(\.conflict.id) == [2, 1])
        #expect(try store.conflictHistory(of: TodoList.self, id: 2).map(\.conflict.field) == ["name"])
        #expect(try store.conflictHistory(of: TodoList.self, limit: 1).map(\.conflict.id) == [2])
        #expect(try store.conflictHistory(of: NoteRecord.self).map(\.conflict.entity) == ["notes"])
        #expect(try store.conflictHistory(of: NoteRecord.self, id: 1).isEmpty)
    }
}
