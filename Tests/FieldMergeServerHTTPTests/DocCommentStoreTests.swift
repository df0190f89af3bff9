import FieldMerge
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation
import Testing

/// The snippets of the `///` comments on `StoredRecord`, `StoreReader` and
/// `SyncClient.changes()`, between `// <file> block begin` and `… end`
/// (``DocSnippets/docComments`` checks that they are the comments' code, line for line).
@Suite struct DocCommentStoreTests {
    @Test func storedRecordSnippet_insertsWithATemporaryId_andSavesTheChangedField() throws {
        struct TodoList: StoredRecord {
            var id: Int64 = 0
            var name = ""
            static let table = RecordTable<TodoList>("lists", [.text("name", \.name)])
        }
        // StoredRecord.swift block begin
        struct Reminder: StoredRecord {
            var id: Int64 = 0
            var title = ""
            var isDone = false
            var listID: Int64?
            static let table = RecordTable<Reminder>("reminders", [
                .text("title", \.title),
                .bool("isDone", \.isDone),
                .reference("listID", \.listID, to: "lists", onDelete: .cascade),
            ])
        }
        let schema = try Schema([TodoList.table.entity, Reminder.table.entity])
        let store = try Store(.memory, schema: schema)
        var reminder = Reminder(title: "Milk")
        try store.insert(&reminder)          // reminder.id is now -1, a temporary id
        reminder.isDone = true
        try store.save(reminder)             // stamps and queues `isDone` only
        // StoredRecord.swift block end
        #expect(reminder.id == -1)
        reminder.title = "Oat milk"
        #expect(try store.save(reminder) == FieldMask([0]))
        let pending = try store.pendingChanges()
        #expect(pending.count == 1 && pending.first?.kind == .create)
    }

    @Test func untypedSnippet_insertsAndUpdatesByName() throws {
        let tasks = Entity("tasks", fields: [Field("title", .text), Field("done", .bool)])
        let store = try Store(.memory, schema: try Schema([tasks]))
        // Store+Untyped.swift block begin
        let id = try store.untyped.insert("tasks", values: [.text("Write spec"), .bool(false)])
        try store.untyped.update("tasks", id: id, ["done": .bool(true)])
        // Store+Untyped.swift block end
        #expect(id == -1)
        #expect(try store.untyped.record("tasks", id: id)?.values == [.text("Write spec"), .bool(true)])
        #expect(try store.pendingChanges().count == 1)
    }

    @Test func storeTransactionSnippet_keepsTheOuterPart_andReportsItOnce() throws {
        struct Reminder: StoredRecord {
            var id: Int64 = 0
            var title = ""
            static let table = RecordTable<Reminder>("reminders", [.text("title", \.title)])
        }
        let store = try Store(.memory, schema: try Schema([Reminder.table.entity]))
        nonisolated(unsafe) var changes: [StoreChange] = []
        store.onChange = { changes.append($0) }
        // Store+Transaction.swift block begin
        try store.transaction {
            var milk = Reminder(title: "Milk")
            try store.insert(&milk)
            try? store.transaction {                 // a savepoint
                var bread = Reminder(title: "Bread")
                try store.insert(&bread)
                throw CancellationError()            // undoes the bread only
            }
        }                                            // one StoreChange: the milk
        // Store+Transaction.swift block end
        #expect(try store.database.rows("SELECT title FROM reminders") == [[.text("Milk")]])
        #expect(changes.count == 1 && changes.first?.inserted == ["reminders": [-1]])
    }

    @Test func storeReaderSnippet_readsWhatTheStoreCommitted() async throws {
        let schema = try httpTestSchema()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-reader-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("replica.sqlite").path
        let store = try Store(.file(path: path), schema: schema)
        let first = try store.insert("tasks", values: ["open", false, 0, nil])
        _ = try store.insert("tasks", values: ["done", true, 0, nil])
        // StoreReader.swift block begin
        let reader = try StoreReader(path: path, schema: schema)   // path: the file of a Store with this schema
        let open = try await reader.read { store in try store.database.rows("SELECT id FROM tasks WHERE done = 0") }
        // StoreReader.swift block end
        #expect(open == [[.integer(first)]])
        withExtendedLifetime(store) {}
    }

    @Test func changesSnippet_reloadsTheUpdatedIds() async throws {
        let schema = try httpTestSchema()
        let client = SyncClient(store: try Store(.memory, schema: schema),
                                transport: InProcessTransport(server: try RevisionServer(.memory, schema: schema)))
        let id = try await client.write { try $0.insert("tasks", values: ["a", false, 0, nil]) }
        let (reloads, reloaded) = AsyncStream.makeStream(of: [Int64].self)
        let reload: @Sendable ([Int64]) -> Void = { reloaded.yield($0) }
        let watching = Task {
            // SyncClient+Changes.swift block begin
            for await change in await client.changes() {
                if let ids = change.updated["tasks"] { reload(ids) }
            }
            // SyncClient+Changes.swift block end
        }
        defer { watching.cancel() }
        // The subscription starts when the task runs: update until an update arrives.
        let updating = Task {
            for round in 1...200 where !Task.isCancelled {
                try await client.write { _ = try $0.update("tasks", id: id, ["title": .text("a\(round)")]) }
                try await Task.sleep(for: .milliseconds(50))
            }
            reloaded.finish()   // no reload in 10 s: the check below fails instead of waiting
        }
        defer { updating.cancel() }
        var iterator = reloads.makeAsyncIterator()
        #expect(await iterator.next() == [id])
    }
}
