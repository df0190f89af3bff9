import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerPostgres
import FieldMergeSync
import Foundation
import Testing

/// A PostgreSQL data set moves to a newer schema version when a server opens it with one
/// (Specs/schema.md, "Evolution"), and keeps answering the clients of the version it left.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresMigrationTests {
    static let v1Entities = [
        Entity("lists", fields: [Field("name", .text)]),
        Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))]),
    ]

    /// Renames an entity and a field, adds a field with a default, an entity with a
    /// reference, and a reference field.
    static func v2() throws -> Schema {
        try Schema([
            Entity("boards", fields: [Field("label", .text, renamedFrom: "name")], renamedFrom: "lists"),
            Entity("tasks", fields: [
                Field("title", .text), Field("listID", .reference(to: "boards", onDelete: .cascade)),
                Field("minutes", .integer, strategy: .counter, default: .integer(0)),
                Field("blockedBy", .reference(to: "tasks", onDelete: .setNull)),
            ]),
            Entity("comments", fields: [Field("body", .text), Field("taskID", .reference(to: "tasks", onDelete: .cascade))]),
        ], version: 2)
    }

    @Test func aDataSetMigrates_andAnswersItsOldClientsInTheirSchema() async throws {
        try await PostgresTestDatabase.with { database in
            let v1 = try Schema(Self.v1Entities)
            let before = try await database.server(v1)
            let file = NSTemporaryDirectory() + "fm-pg-migration-\(UUID().uuidString).sqlite"
            defer { try? FileManager.default.removeItem(atPath: file) }
            let old = SyncClient(store: try Store(.file(path: file), schema: v1, replica: ReplicaID(1)), transport: InProcessTransport(server: before))
            try await old.write { store in
                let list = try store.insert("lists", values: [.text("Home")])
                _ = try store.insert("tasks", values: [.text("Milk"), .integer(list)])
            }
            _ = try await old.sync()
            try await old.withStore { $0.database.close() }
            // A request whose answer the old client lost: its retry must still be recognised.
            let lost = SyncRequest(
                maxRevision: 1, changeSets: [createList("Work", temporaryID: -7)], clientID: "lost", requestID: "2-lost",
                schemaVersion: 1, schemaFingerprint: v1.fingerprint)
            let first = try await before.handle(lost)

            let server = try await database.server(try Self.v2())
            #expect(server.migrations.map(\.description) == [
                "rename entity lists to boards", "add entity comments", "rename field boards.name to label",
                "add field tasks.minutes", "add field tasks.blockedBy",
            ])
            #expect(server.olderSchemas.map(\.schema.version) == [1])
            #expect(server.olderSchemas.first?.currentNames == ["boards", "tasks"])
            // A server that opened the data set before the migration refuses to go on with it.
            let refused = await #expect(throws: ServerError.self) { _ = try await before.handle(SyncRequest(maxRevision: 0, changeSets: [])) }
            #expect(refused?.code == .schemaMismatch)
            #expect(refused?.message.contains("restart this server") == true)

            // The retry is recognised across the migration, and answered in version 1.
            #expect(try await server.handle(lost) == first)

            // The old device keeps syncing in its schema; a new one sees version 2.
            let transport = InProcessTransport(server: server)
            let oldAgain = SyncClient(store: try Store(.file(path: file), schema: v1, replica: ReplicaID(1)), transport: transport)
            try await oldAgain.write { store in _ = try store.update("lists", id: 1, ["name": "House"]) }
            _ = try await oldAgain.sync()
            let new = SyncClient(store: try Store(.memory, schema: try Self.v2(), replica: ReplicaID(2)), transport: transport)
            _ = try await new.sync()
            #expect(try await new.read { try $0.record("boards", id: 1)?.values } == [.text("House")])
            #expect(try await new.read { try $0.record("tasks", id: 1)?.values } == [.text("Milk"), .integer(1), .integer(0), .null])
            try await new.write { store in
                _ = try store.update("tasks", id: 1, ["minutes": .integer(5)])
                _ = try store.insert("comments", values: [.text("Soy?"), .integer(1)])
                _ = try store.insert("tasks", values: [.text("Tea"), .integer(1), .integer(0), .integer(1)])
            }
            _ = try await new.sync()
            // The old device edits the task's title: the minutes stay.
            try await oldAgain.write { store in _ = try store.update("tasks", id: 1, ["title": "Oat milk"]) }
            _ = try await oldAgain.sync()
            _ = try await new.sync()
            #expect(try await new.read { try $0.record("tasks", id: 1)?.values } == [.text("Oat milk"), .integer(1), .integer(5), .null])
            #expect(try await oldAgain.read { try $0.record("tasks", id: 1)?.values } == [.text("Oat milk"), .integer(1)])
            #expect(try await oldAgain.read { try $0.database.scalar("SELECT count(*) FROM tasks") } == .integer(2))

            // Another process opening the migrated data set migrates nothing and answers version 1 too.
            let another = try await database.server(try Self.v2())
            #expect(another.migrations.isEmpty)
            #expect(another.olderSchemas.map(\.schema.version) == [1])
            // The references the migration added have their foreign keys and indexes.
            let schema = database.url.schema
            #expect(try await database.count(
                "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = $1 AND table_name = $2 AND constraint_type = 'FOREIGN KEY'",
                schema, "tasks") == 2)
            #expect(try await database.count(
                "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = $1 AND table_name = $2 AND constraint_type = 'FOREIGN KEY'",
                schema, "comments") == 1)
            #expect(try await database.count("SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2", schema, "__fm_ref_v2_1_3") == 1)
        }
    }

    /// In merge mode a record keeps per-field revisions; the added fields get the record's
    /// own, and merges after the migration read them.
    @Test func addedFields_inMergeMode_keepTheFieldRevisions() async throws {
        try await PostgresTestDatabase.with { database in
            let v1 = try Schema(Self.v1Entities)
            let seed = try await database.server(v1, mode: .merge)
            let client = SyncClient(store: try Store(.memory, schema: v1, replica: ReplicaID(1)), transport: InProcessTransport(server: seed))
            try await client.write { store in
                let list = try store.insert("lists", values: [.text("Home")])
                _ = try store.insert("tasks", values: [.text("Milk"), .integer(list)])
            }
            _ = try await client.sync()
            try await client.write { store in _ = try store.update("tasks", id: 1, ["title": "Oat milk"]) }
            _ = try await client.sync()
            let length = "SELECT length(\"__fm_fields\") FROM \"\(database.url.schema)\".\"tasks\" WHERE \"id\" = 1"
            #expect(try await database.count(length) == 2)  // title changed at revision 2, listID at 1

            let server = try await database.server(try Self.v2(), mode: .merge)
            #expect(try await database.count(length) == 4)
            // An update of an added field reads and writes the field revisions.
            let v2 = try Self.v2()
            let update = WireRecord(id: 1, present: FieldMask([2]), values: [.null, .null, .integer(3), .null], revision: 2)
            let answer = try await server.handle(SyncRequest(
                maxRevision: 2, changeSets: [ChangeSet(entities: [EntityChanges(entity: "tasks", update: [1], records: [update])])],
                schemaVersion: 2, schemaFingerprint: v2.fingerprint))
            #expect(answer.changeSets.last?.conflict != true)
            #expect(try await database.count(length) == 4)
            let fresh = SyncClient(store: try Store(.memory, schema: v2, replica: ReplicaID(2)), transport: InProcessTransport(server: server))
            _ = try await fresh.sync()
            #expect(try await fresh.read { try $0.record("tasks", id: 1)?.values } == [.text("Oat milk"), .integer(1), .integer(3), .null])
        }
    }

    static let words: @Sendable (Value) -> Value = { value in
        guard case .text(let text) = value else { return .null }
        return .textSet(TextSet(text.split(separator: " ").map(String.init)))
    }

    @Test func aTypeChange_convertsEveryValue_andAWrongConversionLeavesTheDataSetAsItWas() async throws {
        try await PostgresTestDatabase.with { database in
            let v1 = try Schema(Self.v1Entities)
            let seed = try await database.server(v1)
            let client = SyncClient(store: try Store(.memory, schema: v1, replica: ReplicaID(1)), transport: InProcessTransport(server: seed))
            try await client.write { store in
                let list = try store.insert("lists", values: [.text("Home")])
                _ = try store.insert("tasks", values: [.text("Oat milk"), .integer(list)])
                _ = try store.insert("tasks", values: [.null, .integer(list)])
            }
            _ = try await client.sync()

            var wrong = Self.v1Entities
            wrong[1].fields[0] = Field("title", .textSet, strategy: .union, convertedFrom: { _ in .text("not a set") })
            let failed = await #expect(throws: ServerError.self) { _ = try await database.server(try Schema(wrong, version: 2)) }
            #expect(failed?.message.contains("gave a text") == true)
            // Nothing changed: a version-1 server still opens it.
            _ = try await database.server(v1)

            var entities = Self.v1Entities
            entities[1].fields[0] = Field("title", .textSet, strategy: .union, convertedFrom: Self.words)
            let v2 = try Schema(entities, version: 2)
            let server = try await database.server(v2)
            #expect(server.migrations.map(\.description).first == "convert field tasks.title from text to textSet (the app's conversion)")
            let fresh = SyncClient(store: try Store(.memory, schema: v2, replica: ReplicaID(2)), transport: InProcessTransport(server: server))
            _ = try await fresh.sync()
            #expect(try await fresh.read { try $0.record("tasks", id: 1)?.values.first } == .textSet(TextSet(["Oat", "milk"])))
            #expect(try await fresh.read { try $0.record("tasks", id: 2)?.values.first } == .null)
        }
    }
}
