import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// Retiring an entity (Specs/schema.md, "Retiring an entity"): a store empties it, drops what
/// it had to send of it, and refuses to write it again, through its API and plain SQL alike.
@Suite struct StoreRetireEntityTests {
    static func v2() throws -> Schema {
        try Schema([
            Entity("lists", fields: [Field("name", .text)], retired: true),
            Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade), retired: true)]),
        ], version: 2)
    }

    @Test func retiringAnEntity_emptiesIt_dropsItsPendingChanges_andKeepsTheRest() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try StoreMigrationTests.fileWithHistory(path)
        do {
            // More to lose: an edit of the acknowledged list and a list never sent.
            let store = try Store(.file(path: path), schema: StoreMigrationTests.v1())
            _ = try store.update("lists", id: 1, ["name": "Work"])
            _ = try store.insert("lists", values: [.text("Shop")])
            #expect(try store.pendingChanges().contains { $0.entity == "lists" })
            store.database.close()
        }
        let store = try Store(.file(path: path), schema: Self.v2())
        defer { store.database.close() }
        #expect(store.migrations.map(\.description) == ["retire entity lists", "retire field tasks.listID"])
        #expect(try store.database.scalar("SELECT count(*) FROM lists") == .integer(0))
        #expect(try store.database.scalar("SELECT count(*) FROM __fm_outbox WHERE entity = 'lists'") == .integer(0))
        #expect(try store.database.scalar("SELECT count(*) FROM __fm_idmap WHERE entity = 'lists'") == .integer(0))
        #expect(try store.record("lists", id: 1) == nil)
        // The tasks' changes stay, without the retired reference.
        #expect(try store.pendingChanges().map { "\($0.entity)#\($0.id) \($0.kind)" }.sorted()
            == ["tasks#-1 create", "tasks#1 update", "tasks#2 delete"])
        #expect(try store.record("tasks", id: 1)?.values == [.text("Oat milk"), .null])

        // Nothing writes it again: not the store's API...
        let inserted = #expect(throws: StoreError.self) { try store.insert("lists", values: [.text("Garden")]) }
        #expect(inserted?.message.contains("retired") == true)
        #expect(throws: StoreError.self) { try store.update("lists", id: 1, ["name": "Garden"]) }
        #expect(throws: StoreError.self) { try store.delete("lists", id: 1) }
        // ...nor plain SQL from another connection.
        let other = try Database(.file(path: path))
        let sql = #expect(throws: SQLiteError.self) { try other.run("INSERT INTO lists (name) VALUES ('Garden')") }
        #expect(sql?.description.contains("retired") == true)
        other.close()
        try store.captureExternalWrites()
        #expect(try store.database.scalar("SELECT count(*) FROM lists") == .integer(0))
        // The rest works as before.
        _ = try store.update("tasks", id: 1, ["title": "Tea"])
        try store.delete("tasks", id: 1)
    }

    @Test func aReopenedStore_keepsTheGuard_andMigratesNothingMore() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try StoreMigrationTests.fileWithHistory(path)
        try Store(.file(path: path), schema: Self.v2()).database.close()
        let store = try Store(.file(path: path), schema: Self.v2())
        defer { store.database.close() }
        #expect(store.migrations.isEmpty)
        #expect(throws: SQLiteError.self) { try store.database.run("INSERT INTO lists (name) VALUES ('Garden')") }
        // A store made with the retiring version from the start is guarded too.
        let fresh = try Store(.memory, schema: Self.v2())
        #expect(throws: SQLiteError.self) { try fresh.database.run("INSERT INTO lists (name) VALUES ('Garden')") }
        #expect(throws: StoreError.self) { try fresh.insert("lists", values: [.text("Garden")]) }
    }

    @Test func aSyncedFieldReferencingARetiredEntity_isRefused() {
        let error = #expect(throws: MergeError.self) {
            try Schema([
                Entity("lists", fields: [Field("name", .text)], retired: true),
                Entity("tasks", fields: [Field("listID", .reference(to: "lists", onDelete: .cascade))]),
            ])
        }
        #expect(error == .referenceToRetiredEntity(entity: "tasks", field: "listID", target: "lists"))
        // A retired entity's own references need nothing.
        #expect(throws: Never.self) {
            try Schema([
                Entity("lists", fields: [Field("name", .text)]),
                Entity("notes", fields: [Field("listID", .reference(to: "lists", onDelete: .cascade))], retired: true),
            ])
        }
    }
}
