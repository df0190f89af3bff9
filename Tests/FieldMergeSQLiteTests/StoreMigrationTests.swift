import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// A store opened with a newer schema version migrates its file (Specs/schema.md, "Evolution").
@Suite struct StoreMigrationTests {
    static func v1() throws -> Schema {
        try Schema([
            Entity("lists", fields: [Field("name", .text)]),
            Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))]),
        ])
    }

    /// A file with an acknowledged list, an acknowledged task edited since (pending, with its
    /// ancestor), a task never synced, and a deleted task not yet sent.
    static func fileWithHistory(_ path: String) throws {
        let store = try Store(.file(path: path), schema: v1(), replica: ReplicaID(7), wall: ManualWallClock(milliseconds: 5_000))
        let server = Stamp(milliseconds: 4_000, replica: ReplicaID(99))
        try store.apply(ServerChanges(records: [
            AcknowledgedRecord(Record(entity: "lists", id: 1, values: [.text("Home")], stamps: [server]), revision: 1),
            AcknowledgedRecord(Record(entity: "tasks", id: 1, values: [.text("Milk"), .integer(1)], stamps: [server, server]), revision: 1),
            AcknowledgedRecord(Record(entity: "tasks", id: 2, values: [.text("Eggs"), .integer(1)], stamps: [server, server]), revision: 1),
        ], maxRevision: 1))
        _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
        _ = try store.insert("tasks", values: [.text("Bread"), .integer(1)])
        try store.delete("tasks", id: 2)
        store.database.close()
    }

    @Test func addingFieldsAndAnEntity_keepsDataAndPendingChanges() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try Self.fileWithHistory(path)
        let v2 = try Schema([
            Entity("lists", fields: [Field("name", .text), Field("color", .text, default: .text("blue"))]),
            Entity("tasks", fields: [
                Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade)),
                Field("minutes", .integer, strategy: .counter, default: .integer(0)),
                Field("tags", .textSet, strategy: .union),
            ]),
            Entity("comments", fields: [Field("body", .text), Field("taskID", .reference(to: "tasks", onDelete: .cascade))]),
        ], version: 2)
        let store = try Store(.file(path: path), schema: v2, wall: ManualWallClock(milliseconds: 6_000))
        #expect(store.migrations.map(\.description) == [
            "add entity comments", "add field lists.color", "add field tasks.minutes", "add field tasks.tags",
        ])
        // Existing records get the default, stamped older than any edit; edits stay pending.
        let list = try #require(try store.record("lists", id: 1))
        #expect(list.values == [.text("Home"), .text("blue")] && list.stamps[1] == .schemaDefault)
        let milk = try #require(try store.record("tasks", id: 1))
        #expect(milk.values == [.text("Oat milk"), .integer(1), .integer(0), .null])
        #expect(try store.pendingFields("tasks", id: 1) == FieldMask([0]))
        let ancestor = try #require(try store.ancestor("tasks", id: 1))
        #expect(ancestor.record.values == [.text("Milk"), .integer(1), .integer(0), .null] && ancestor.revision == 1)
        #expect(try store.pendingChanges().map { "\($0.entity)#\($0.id) \($0.kind)" }.sorted()
            == ["tasks#-1 create", "tasks#1 update", "tasks#2 delete"])
        #expect(try store.record("tasks", id: 2)?.isDeleted == true)
        // The new fields and the new entity work, plain SQL capture included.
        _ = try store.update("tasks", id: 1, ["minutes": .integer(5), "tags": .textSet(TextSet(["home"]))])
        let comment = try store.insert("comments", values: [.text("2 litres"), .integer(1)])
        try store.database.run("UPDATE lists SET color = 'red' WHERE id = 1")
        try store.captureExternalWrites()
        #expect(try store.record("lists", id: 1)?.values[1] == .text("red"))
        #expect(try store.pendingFields("lists", id: 1) == FieldMask([1]))
        #expect(try store.record("comments", id: comment)?.values == [.text("2 litres"), .integer(1)])
        store.database.close()
        // Opened again with the same schema: nothing left to migrate.
        let again = try Store(.file(path: path), schema: v2)
        #expect(again.migrations.isEmpty)
        #expect(try again.record("tasks", id: 1)?.values[2] == .integer(5))
    }

    @Test func renamingAFieldAndAnEntity_keepsValuesStampsAndTheOutbox() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try Self.fileWithHistory(path)
        let v2 = try Schema([
            Entity("projects", fields: [Field("title", .text, renamedFrom: "name")], deletePolicy: .editWins, renamedFrom: "lists"),
            Entity("tasks", fields: [
                Field("title", .text, strategy: .text), Field("projectID", .reference(to: "projects", onDelete: .cascade), renamedFrom: "listID"),
            ]),
        ], version: 2)
        let store = try Store(.file(path: path), schema: v2)
        #expect(store.migrations.map(\.description) == [
            "rename entity lists to projects",
            "entity projects: default=lastEditWins delete=deleteWins becomes default=lastEditWins delete=editWins",
            "rename field projects.name to title",
            "field tasks.title: strategy=default becomes strategy=text",
            "rename field tasks.listID to projectID",
        ])
        #expect(try store.record("projects", id: 1)?.values == [.text("Home")])
        #expect(try store.record("projects", id: 1)?.stamps == [Stamp(milliseconds: 4_000, replica: ReplicaID(99))])
        #expect(try store.record("tasks", id: 1)?.values == [.text("Oat milk"), .integer(1)])
        #expect(try store.pendingChanges().count == 3)
        // The foreign key follows the renamed table: deleting the project cascades.
        try store.delete("projects", id: 1)
        #expect(try store.record("tasks", id: 1)?.isDeleted == true)
        #expect(try store.database.scalar("SELECT count(*) FROM tasks") == .integer(0))
    }

    @Test func changesAStoreCannotMake_areRefusedByName_andChangeNothing() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try Self.fileWithHistory(path)
        let cases: [(Schema, String)] = [
            (try Schema([Entity("lists", fields: [Field("name", .integer)]),
                         Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))])], version: 2),
             "change the type of lists.name from text to integer"),
            (try Schema([Entity("lists", fields: [Field("name", .text)])], version: 2), "remove entity tasks"),
            (try Schema([Entity("lists", fields: [Field("name", .text)]),
                         Entity("tasks", fields: [Field("due", .date), Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))])], version: 2),
             "add field tasks.due before existing fields"),
            (try Schema([Entity("lists", fields: [Field("name", .text), Field("color", .text)]),
                         Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))])]),
             "same version 1"),
        ]
        for (schema, expected) in cases {
            let error = #expect(throws: StoreError.self) { try Store(.file(path: path), schema: schema) }
            #expect(error?.code == .schemaMismatch)
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        }
        // Nothing changed: the file still opens with its own schema, data and outbox intact.
        let store = try Store(.file(path: path), schema: Self.v1())
        #expect(store.migrations.isEmpty)
        #expect(try store.pendingChanges().count == 3)
        #expect(try store.record("tasks", id: 1)?.values == [.text("Oat milk"), .integer(1)])
    }

    @Test func anOlderSchemaVersion_isRefused() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        let v3 = try Schema(Self.v1().entities, version: 3)
        _ = try Store(.file(path: path), schema: v3)
        let error = #expect(throws: StoreError.self) { try Store(.file(path: path), schema: Self.v1()) }
        #expect(error?.message.contains("schema version 3, newer than this schema's 1") == true)
        // The same entities under a higher version: only the version moves.
        let v4 = try Schema(Self.v1().entities, version: 4)
        #expect(try Store(.file(path: path), schema: v4).migrations.isEmpty)
        #expect(throws: StoreError.self) { try Store(.file(path: path), schema: v3) }
    }

    @Test func outlines_readBackTheirLines() throws {
        let outline = SchemaOutline(try storeSchema())
        let read = try #require(SchemaOutline(lines: outline.lines))
        #expect(read.lines == outline.lines)
        #expect(read.changes(to: outline).isEmpty)
        #expect(SchemaOutline(lines: ["table x"]) == nil)
    }

    /// Retiring a field empties it everywhere the store keeps it, keeps the rest pending, and
    /// the store refuses to write it again; a plain-SQL write to it is never sent.
    @Test func retiringAField_emptiesIt_andItIsNeverWrittenOrSentAgain() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try Self.fileWithHistory(path)
        let v2 = try Schema([
            Entity("lists", fields: [Field("name", .text)]),
            Entity("tasks", fields: [Field("title", .text, retired: true), Field("listID", .reference(to: "lists", onDelete: .cascade))]),
        ], version: 2)
        let store = try Store(.file(path: path), schema: v2)
        defer { store.database.close() }
        #expect(store.migrations.map(\.description) == ["retire field tasks.title"])
        #expect(store.maxRevision == 1)  // nothing to catch up: the field is no longer sent
        #expect(try store.database.scalar("SELECT count(*) FROM tasks WHERE title IS NOT NULL") == .integer(0))
        let milk = try #require(try store.record("tasks", id: 1))
        #expect(milk.values == [.null, .integer(1)])
        #expect(milk.stamps[0] == .none)
        #expect(try store.pendingFields("tasks", id: 1) == FieldMask())  // the title edit is not sent
        let deleted = try #require(try store.pendingChanges().first { $0.kind == .delete })
        #expect(deleted.id == 2)

        let error = #expect(throws: StoreError.self) { try store.update("tasks", id: 1, ["title": "Tea"]) }
        #expect(error?.message.contains("retired") == true)
        #expect(throws: StoreError.self) { try store.insert("tasks", values: [.text("Tea"), .integer(1)]) }
        let created = try store.insert("tasks", values: [.null, .integer(1)])
        #expect(try store.record("tasks", id: created)?.stamps[0] == Stamp.none)

        // Another connection writes the retired column with plain SQL: nothing to send.
        let other = try Database(.file(path: path))
        try other.run("UPDATE tasks SET title = 'Coffee' WHERE id = 1")
        other.close()
        try store.captureExternalWrites()
        #expect(try store.pendingFields("tasks", id: 1) == FieldMask())
    }

    static let words: @Sendable (Value) -> Value = { value in
        guard case .text(let text) = value else { return .null }
        return .textSet(TextSet(text.split(separator: " ").map(String.init)))
    }

    /// A type change the app converts itself: every value the store keeps (rows, ancestors,
    /// tombstones) goes through its conversion; stamps and pending edits stay.
    @Test func aTypeChange_withTheAppsConversion_convertsEveryValue() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try Self.fileWithHistory(path)
        let before = try Store(.file(path: path), schema: Self.v1())
        let milkStamps = try #require(try before.record("tasks", id: 1)).stamps
        before.database.close()
        let v2 = try Schema([
            Entity("lists", fields: [Field("name", .text)]),
            Entity("tasks", fields: [
                Field("title", .textSet, strategy: .union, convertedFrom: Self.words),
                Field("listID", .reference(to: "lists", onDelete: .cascade)),
            ]),
        ], version: 2)
        let store = try Store(.file(path: path), schema: v2)
        defer { store.database.close() }
        #expect(store.migrations.map(\.description) == [
            "convert field tasks.title from text to textSet (the app's conversion)",
            "field tasks.title: strategy=default becomes strategy=union",
        ])
        let milk = try #require(try store.record("tasks", id: 1))
        #expect(milk.values == [.textSet(TextSet(["Oat", "milk"])), .integer(1)])
        #expect(milk.stamps == milkStamps)
        #expect(try store.ancestor("tasks", id: 1)?.record.values[0] == .textSet(TextSet(["Milk"])))
        #expect(try store.pendingFields("tasks", id: 1) == FieldMask([0]))
        #expect(try store.ancestor("tasks", id: 2)?.record.values[0] == .textSet(TextSet(["Eggs"])))  // the deleted one
        _ = try store.update("tasks", id: 1, ["title": .textSet(TextSet(["Oat", "milk", "2l"]))])
    }

    @Test func aTypeChange_withoutAConversion_orWithAWrongOne_isRefused_andTheFileStays() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        try Self.fileWithHistory(path)
        func v2(_ convert: (@Sendable (Value) -> Value)?) throws -> Schema {
            try Schema([
                Entity("lists", fields: [Field("name", .text)]),
                Entity("tasks", fields: [
                    Field("title", .integer, convertedFrom: convert), Field("listID", .reference(to: "lists", onDelete: .cascade)),
                ]),
            ], version: 2)
        }
        let none = #expect(throws: StoreError.self) { try Store(.file(path: path), schema: v2(nil)) }
        #expect(none?.message.contains("change the type of tasks.title from text to integer") == true)
        let wrong = #expect(throws: StoreError.self) { try Store(.file(path: path), schema: v2({ $0 })) }
        #expect(wrong?.message.contains("the conversion of field 'tasks.title' to integer gave a text") == true)
        let store = try Store(.file(path: path), schema: Self.v1())  // unchanged
        #expect(try store.record("tasks", id: 1)?.values[0] == .text("Oat milk"))
        store.database.close()
    }
}
