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
            let lists = Entity("lists", fields: [
                Field("name", .text), Field("color", .integer, strategy: .serverWins), Field("position", .real),
            ])
            let reminders = Entity("reminders", fields: [
                Field("title", .text), Field("notes", .text, strategy: .text), Field("isCompleted", .bool),
                Field("priority", .integer, strategy: .max), Field("dueDate", .date),
                Field("minutesSpent", .integer, strategy: .counter), Field("tags", .textSet, strategy: .union),
                Field("attachment", .blob), Field("listID", .reference(to: "lists", onDelete: .cascade)),
            ])
            let schema = try Schema([lists, reminders])

            let transport = HTTPTransport(url: serverURL)
            let alice = SyncClient(store: try Store(.file(path: "alice.sqlite"), schema: schema), transport: transport)
            let bob = SyncClient(store: try Store(.file(path: "bob.sqlite"), schema: schema), transport: transport)
            try await alice.write { _ = try $0.untyped.insert("reminders", values: ["Milk", "", false, 0, nil, 0, .textSet([]), nil, nil]) }
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
