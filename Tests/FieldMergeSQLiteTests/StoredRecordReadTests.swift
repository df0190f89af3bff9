import FieldMerge
import FieldMergeSQLite
import Foundation
import Testing

/// An app type with `Date` properties.
struct Appointment: StoredRecord {
    var id: Int64 = 0
    var title = ""
    var starts = Date(timeIntervalSince1970: 0)
    var ends: Date?
    static let table = RecordTable<Appointment>("appointments", [
        .text("title", \.title), .date("starts", \.starts), .date("ends", \.ends),
    ])
}

@Suite struct StoredRecordReadTests {
    func store() throws -> Store {
        try Store(.memory, schema: Schema([TodoList.table.entity, Reminder.table.entity, Appointment.table.entity]),
                  replica: ReplicaID(1), wall: ManualWallClock(milliseconds: 1_000))
    }

    @Test func dateProperties_roundTripToTheMillisecond() throws {
        let store = try store()
        var meeting = Appointment(title: "Standup", starts: Date(timeIntervalSince1970: 1_767_225_600.1234), ends: nil)
        try store.insert(&meeting)
        var fetched = try #require(try store.fetch(Appointment.self, id: meeting.id))
        #expect(fetched.starts == Date(timeIntervalSince1970: 1_767_225_600.123))
        #expect(fetched.ends == nil)
        // Stored as the date field's milliseconds.
        #expect(try store.record("appointments", id: meeting.id)?.values[1] == .date(1_767_225_600_123))
        fetched.ends = Date(timeIntervalSince1970: 1_767_227_400)
        #expect(try store.save(fetched) == FieldMask([2]))
        #expect(try store.fetch(Appointment.self, id: meeting.id)?.ends == Date(timeIntervalSince1970: 1_767_227_400))
    }

    @Test func fetchAll_listsTheLivingRecordsInIdOrder() throws {
        let store = try store()
        #expect(try store.fetchAll(TodoList.self).isEmpty)
        var names: [String] = []
        for name in ["Home", "Work", "Garden"] {
            var list = TodoList(name: name)
            try store.insert(&list)
            names.append(name)
        }
        try store.delete("lists", id: -2)
        let lists = try store.fetchAll(TodoList.self)
        #expect(lists.map(\.name) == ["Home", "Garden"])
        #expect(lists.map(\.id) == [-1, -3])
        #expect(try store.fetchAll(Appointment.self).isEmpty)
    }

    /// A row another connection inserted with plain SQL is listed before the store has
    /// taken it in (under the temporary id its trigger gave it), not read as damaged.
    @Test func fetchAll_listsARowInsertedWithPlainSQL_beforeItIsTakenIn() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        let store = try Store(.file(path: path), schema: Schema([TodoList.table.entity, Reminder.table.entity]), replica: ReplicaID(1))
        var home = TodoList(name: "Home")
        try store.insert(&home)
        let other = try Database(.file(path: path))
        try other.run("INSERT INTO lists (name) VALUES (?)", [.text("Work")])
        other.close()
        #expect(try store.fetchAll(TodoList.self).map(\.name) == ["Home", "Work"])
        #expect(try store.fetchAll(TodoList.self).map(\.id) == [-1, -2])
        try store.captureExternalWrites()
        #expect(try store.record("lists", id: -2)?.stamps.allSatisfy { !$0.isNone } == true)
    }
}
