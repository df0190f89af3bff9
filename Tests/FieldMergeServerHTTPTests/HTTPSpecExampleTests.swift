import FieldMerge
import FieldMergeJSON
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation
import Testing

/// The Swift snippet of Specs/http.md (between `// http.md block begin` and `… end`,
/// checked by ``DocSnippets``), against a server on Specs/schemas/reminders.json as the
/// spec says: the sync fails if the Swift schema in the spec and the file differ. The
/// snippet writes `alice.sqlite` and `bob.sqlite` in the working folder; the test removes them.
@Suite(.serialized) struct HTTPSpecExampleTests {
    @Test func httpSpecSnippet_syncsTwoClientsThroughAServerOnTheSchemaFile() async throws {
        Self.removeFiles()
        defer { Self.removeFiles() }
        let file = DocSnippets.root().appendingPathComponent("Specs/schemas/reminders.json")
        let fileSchema = try SchemaDocument.decode(JSONValue.parse(try Data(contentsOf: file)))

        try await withHTTPServer(try RevisionServer(.memory, schema: fileSchema)) { running in
            let serverURL = running.syncURL
            // http.md block begin
            // Specs/schemas/reminders.json, field for field.
            struct TodoList: StoredRecord {
                var id: Int64 = 0
                var name = "", color: Int64 = 0, position = 0.0
                static let table = RecordTable<TodoList>("lists", [
                    .text("name", \.name), .integer("color", \.color, strategy: .serverWins), .real("position", \.position),
                ])
            }
            struct Reminder: StoredRecord {
                var id: Int64 = 0
                var title = "", notes = "", isCompleted = false, priority: Int64 = 0, dueDate: Int64?
                var minutesSpent: Int64 = 0, tags: Set<String> = [], attachment: [UInt8] = [], listID: Int64?
                static let table = RecordTable<Reminder>("reminders", [
                    .text("title", \.title), .text("notes", \.notes, strategy: .text), .bool("isCompleted", \.isCompleted),
                    .integer("priority", \.priority, strategy: .max), .date("dueDate", \.dueDate),
                    .integer("minutesSpent", \.minutesSpent, strategy: .counter), .textSet("tags", \.tags, strategy: .union),
                    .blob("attachment", \.attachment), .reference("listID", \.listID, to: "lists", onDelete: .cascade),
                ])
            }
            let schema = try Schema([TodoList.table.entity, Reminder.table.entity])

            let transport = HTTPTransport(url: serverURL)
            let alice = SyncClient(store: try Store(.file(path: "alice.sqlite"), schema: schema), transport: transport)
            let bob = SyncClient(store: try Store(.file(path: "bob.sqlite"), schema: schema), transport: transport)
            try await alice.write { store in
                var milk = Reminder(title: "Milk")
                try store.insert(&milk)
            }
            _ = try await alice.sync()      // the create goes up; alice's -1 becomes 1
            _ = try await bob.sync()        // bob catches up: he has reminder 1 too
            // http.md block end
            #expect(try await bob.write { try $0.database.rows("SELECT id, title FROM reminders") } == [[.integer(1), .text("Milk")]])
        }
    }

    static func removeFiles() {
        for name in ["alice.sqlite", "bob.sqlite"] {
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: FileManager.default.currentDirectoryPath + "/" + name + suffix)
            }
        }
    }
}
