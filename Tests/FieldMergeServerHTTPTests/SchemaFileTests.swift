import FieldMerge
import FieldMergeJSON
import Foundation
import Testing

/// `Specs/schemas/*.json`, the files `fieldmerge serve --schema` reads.
@Suite struct SchemaFileTests {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Specs/schemas")

    @Test func remindersExample_loads() async throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent("reminders.json"))
        let schema = try SchemaDocument.decode(JSONValue.parse(data))
        #expect(schema.entities.map(\.name) == ["lists", "reminders"])
        let reminders = try #require(schema.entity("reminders"))
        #expect(reminders.fields.count == 9)
        let listID = try #require(reminders.fieldIndex("listID"))
        #expect(reminders.fields[listID].type == .reference(to: "lists", onDelete: .cascade))
        let minutes = try #require(reminders.fieldIndex("minutesSpent"))
        #expect(reminders.fields[minutes].strategy?.name == "counter")
    }

    @Test func everySchemaFile_loads() async throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".json") }
        #expect(!files.isEmpty)
        for file in files {
            let data = try Data(contentsOf: Self.folder.appendingPathComponent(file))
            #expect(throws: Never.self, "\(file)") { try SchemaDocument.decode(JSONValue.parse(data)) }
        }
    }

    /// The evolution example of Specs/schema.md: version 2 of the reminders schema renames a
    /// field, adds fields with defaults and an entity, and changes a delete policy.
    @Test func remindersV2_isASafeMigrationOfTheExample() async throws {
        let load = { (name: String) throws -> Schema in
            try SchemaDocument.decode(JSONValue.parse(Data(contentsOf: Self.folder.appendingPathComponent(name))))
        }
        let (v1, v2) = (try load("reminders.json"), try load("reminders-v2.json"))
        #expect(v1.version == 1 && v2.version == 2)
        let lists = try #require(v2.entity("lists"))
        #expect(lists.fields[0].renamedFrom == "name" && lists.fields[3].defaultValue == .bool(false))
        #expect(v2.entity("reminders")?.fields.last?.defaultValue == .integer(15))
        let changes = SchemaOutline(v1).changes(to: SchemaOutline(v2))
        let allSafe = changes.allSatisfy(\.isSafe)
        #expect(allSafe)
        #expect(changes.map(\.description) == [
            "add entity comments", "rename field lists.name to title", "add field lists.archived",
            "entity reminders: default=lastEditWins delete=deleteWins becomes default=lastEditWins delete=editWins",
            "add field reminders.estimate",
        ])
        // The document writes back what it read.
        let again = try SchemaDocument.decode(SchemaDocument.encode(v2))
        #expect(again.version == 2 && SchemaOutline(again) == SchemaOutline(v2))
        #expect(again.entity("lists")?.fields[3].defaultValue == .bool(false))
        // A default of the wrong type and a version below 1 are clear errors.
        let wrongDefault = #"{"entities": [{"name": "a", "fields": [{"name": "n", "type": "integer", "default": "x"}]}]}"#
        #expect(throws: DocumentError.self) { try SchemaDocument.decode(JSONValue.parse(Data(wrongDefault.utf8))) }
        let zero = #"{"version": 0, "entities": []}"#
        let error = #expect(throws: DocumentError.self) { try SchemaDocument.decode(JSONValue.parse(Data(zero.utf8))) }
        #expect(error?.path == "$.version")
    }
}
