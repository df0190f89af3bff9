import FieldMerge
import FieldMergeSQLite
import Testing

struct TodoList: StoredRecord {
    var id: Int64 = 0
    var name = ""
    static let table = RecordTable<TodoList>("lists", [.text("name", \.name)])
}

struct Reminder: StoredRecord {
    var id: Int64 = 0
    var title = ""
    var notes: String?
    var isDone = false
    var priority: Int64 = 0
    var position = 0.0
    var due: Int64?
    var tags: Set<String> = []
    var attachment: [UInt8] = []
    var listID: Int64?

    static let table = RecordTable<Reminder>("reminders", [
        .text("title", \.title),
        .text("notes", \.notes, strategy: .text),
        .bool("isDone", \.isDone),
        .integer("priority", \.priority, strategy: .max),
        .real("position", \.position),
        .date("due", \.due),
        .textSet("tags", \.tags, strategy: .union),
        .blob("attachment", \.attachment),
        .reference("listID", \.listID, to: "lists", onDelete: .cascade),
    ])
}

@Suite struct StoredRecordTests {
    func store() throws -> Store {
        try Store(.memory, schema: Schema([TodoList.table.entity, Reminder.table.entity]), replica: ReplicaID(1),
                  wall: ManualWallClock(milliseconds: 1_000))
    }

    @Test func insertFetchSave_roundTripsEveryPropertyType() throws {
        let store = try store()
        var list = TodoList(name: "Home")
        try store.insert(&list)
        var reminder = Reminder(
            title: "Milk", notes: "2 litres\n", isDone: false, priority: 2, position: 0.25, due: 1_700_000_000_000,
            tags: ["shop", "dairy"], attachment: [1, 2, 3], listID: list.id)
        try store.insert(&reminder)
        #expect(list.id == -1 && reminder.id == -2)
        let fetched = try #require(try store.fetch(Reminder.self, id: reminder.id))
        #expect(fetched.title == "Milk" && fetched.notes == "2 litres\n" && fetched.priority == 2)
        #expect(fetched.tags == ["shop", "dairy"] && fetched.attachment == [1, 2, 3] && fetched.listID == list.id)
        #expect(fetched.due == 1_700_000_000_000 && fetched.position == 0.25)

        reminder.isDone = true
        reminder.notes = nil
        #expect(try store.save(reminder) == FieldMask([1, 2]))
        #expect(try store.save(reminder).isEmpty)
        #expect(try store.fetch(Reminder.self, id: reminder.id)?.isDone == true)
    }

    @Test func deletingAList_cascadesToItsReminders() throws {
        let store = try store()
        var list = TodoList(name: "Work")
        try store.insert(&list)
        var reminder = Reminder(title: "Report", listID: list.id)
        try store.insert(&reminder)
        try store.delete(list)
        #expect(try store.fetch(Reminder.self, id: reminder.id) == nil)
        #expect(try store.fetch(TodoList.self, id: list.id) == nil)
    }

    @Test func aRowThePropertyCannotHold_isAClearError() throws {
        let store = try store()
        var reminder = Reminder(title: "x")
        try store.insert(&reminder)
        // Written behind the store's back with plain SQL: a text where the bool column is.
        try store.database.run("UPDATE reminders SET isDone = 'yes' WHERE id = ?", [.integer(reminder.id)])
        #expect(throws: StoreError.self) { try store.fetch(Reminder.self, id: reminder.id) }
    }
}

@Suite struct TypedRecordAfterSyncTests {
    /// A typed record inserted offline keeps its temporary id in the app's variable; after a
    /// sync gave it a permanent id, saving, fetching and deleting it still work.
    @Test func aRecordHoldingItsTemporaryId_isFoundUnderItsPermanentId() throws {
        let store = try Store(.memory, schema: Schema([TodoList.table.entity, Reminder.table.entity]), replica: ReplicaID(1),
                              wall: ManualWallClock(milliseconds: 1_000))
        var list = TodoList(name: "Home")
        try store.insert(&list)
        #expect(list.id == -1)
        let confirmed = Record(entity: "lists", id: 5, values: ["Home"], stamps: [Stamp(clock: 1_000 << 16, replica: ReplicaID(1))])
        try store.apply(ServerChanges(
            remaps: [(entity: "lists", temporary: -1, permanent: 5)], records: [AcknowledgedRecord(confirmed, revision: 1)],
            maxRevision: 1))
        #expect(try store.currentID(of: list) == 5)
        list.name = "Work"
        #expect(try store.save(list) == FieldMask([0]))
        #expect(try store.fetch(TodoList.self, id: -1)?.name == "Work")
        #expect(try store.fetch(TodoList.self, id: -1)?.id == 5)
        try store.delete(list)
        #expect(try store.fetch(TodoList.self, id: 5) == nil)
    }
}
