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
}
