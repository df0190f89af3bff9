import FieldMerge
import FieldMergeSQLite
import Testing

/// `store.untyped`: the calls by entity name and field position, for tools whose schema
/// comes from a file. They edit the same rows and outbox as the typed calls.
@Suite struct UntypedRecordsTests {
    func store() throws -> Store {
        try Store(.memory, schema: Schema([TodoList.table.entity, Reminder.table.entity]), replica: ReplicaID(1),
                  wall: ManualWallClock(milliseconds: 1_000))
    }

    @Test func insertUpdateDelete_byNameAndPosition_areTheTypedRecords() throws {
        let store = try store()
        let list = try store.untyped.insert("lists", values: [.text("Home")])
        let values: ContiguousArray<Value> = [
            .text("Milk"), .null, .bool(false), .integer(1), .real(0.5), .null, .textSet(TextSet(["shop"])), .blob([]),
            .integer(list),
        ]
        let id = try store.untyped.insert("reminders", values: values)
        #expect(try store.fetch(Reminder.self, id: id)?.title == "Milk")

        #expect(try store.untyped.update("reminders", id: id, ["isDone": .bool(true), "title": .text("Oat milk")]) == FieldMask([0, 2]))
        #expect(try store.untyped.update("reminders", id: id, set: [(field: 3, value: .integer(5))]) == FieldMask([3]))
        let fetched = try #require(try store.fetch(Reminder.self, id: id))
        #expect(fetched.title == "Oat milk" && fetched.isDone && fetched.priority == 5)
        #expect(try store.untyped.record("reminders", id: id)?.values[0] == .text("Oat milk"))

        try store.untyped.insert("lists", id: 7, values: [.text("Work")])
        #expect(try store.fetch(TodoList.self, id: 7)?.name == "Work")

        // The list's delete cascades to its reminder, as the typed delete does (a record that
        // never reached the server reads as a tombstone or as nothing).
        try store.untyped.delete("lists", id: list)
        #expect(try store.fetch(Reminder.self, id: id) == nil)
        #expect(try store.untyped.record("reminders", id: id)?.isDeleted ?? true)
    }

    @Test func unknownNamesAndBadValues_areClearErrorsAndChangeNothing() throws {
        let store = try store()
        let entity = #expect(throws: StoreError.self) { try store.untyped.insert("notes", values: [.text("x")]) }
        #expect(entity?.code == .unknownEntity)
        let id = try store.untyped.insert("lists", values: [.text("Home")])
        let field = #expect(throws: StoreError.self) { try store.untyped.update("lists", id: id, ["title": .text("x")]) }
        #expect(field?.code == .unknownField)
        let type = #expect(throws: StoreError.self) { try store.untyped.update("lists", id: id, ["name": .integer(3)]) }
        #expect(type?.code == .invalidRecord)
        #expect(try store.fetch(TodoList.self, id: id)?.name == "Home")
        #expect(try store.pendingChanges().count == 1)
    }
}
