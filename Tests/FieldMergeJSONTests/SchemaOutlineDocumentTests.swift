import FieldMerge
import FieldMergeJSON
import Foundation
import Testing

/// Schema documents that name an app's own strategies: read with the app's code, or outlined
/// by name alone for tools that compare schemas (`fieldmerge schema diff`).
@Suite struct SchemaOutlineDocumentTests {
    static func document(strategy: String, version: Int = 1, extraField: Bool = false) -> String {
        """
        {"version": \(version), "entities": [{"name": "findings", "recordStrategy": "keepOpen", "fields": [
          {"name": "title", "type": "text"},
          {"name": "severity", "type": "integer", "strategy": "\(strategy)"}\(extraField ? ", {\"name\": \"note\", \"type\": \"text\"}" : "")
        ]}]}
        """
    }

    static func json(_ text: String) throws -> JSONValue { try JSONValue.parse(Data(text.utf8)) }

    @Test func customNames_areRefusedWithoutTheirCode_andOutlinedByName() throws {
        let text = Self.document(strategy: "severity")
        #expect(throws: DocumentError.self) { try SchemaDocument.decode(try Self.json(text)) }
        let (outline, version) = try SchemaDocument.outline(try Self.json(text))
        #expect(version == 1)
        let entity = try #require(outline.entities.first)
        #expect(entity.rules.hasSuffix("record=keepOpen"))
        #expect(entity.fields.map(\.strategy) == [nil, "severity"])
        // Outlined by name, the same as the schema built with the app's code.
        let severity = FieldStrategy.custom("severity") { $0.lastEdit }
        let keepOpen = ClosureRecordStrategy(name: "keepOpen") { $0.proposal }
        let schema = try SchemaDocument.decode(
            try Self.json(text), customStrategies: ["severity": severity], recordStrategies: ["keepOpen": keepOpen])
        #expect(SchemaOutline(schema) == outline)
    }

    @Test func aStrategyChange_isListedBetweenFilesOfCustomNames() throws {
        let before = try SchemaDocument.outline(try Self.json(Self.document(strategy: "severity")))
        let after = try SchemaDocument.outline(try Self.json(Self.document(strategy: "max", version: 2, extraField: true)))
        let changes = before.outline.changes(to: after.outline).map { "\($0)" }
        #expect(changes.count == 2, "\(changes)")
        #expect(changes.contains { $0.contains("severity") && $0.contains("max") }, "\(changes)")
        #expect(changes.contains { $0.contains("note") }, "\(changes)")
    }

    @Test func aFileIsLoadedWithTheAppsStrategies() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fm-schema-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(Self.document(strategy: "severity").utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: DocumentError.self) { try SchemaDocument.load(contentsOf: path) }
        let schema = try SchemaDocument.load(
            contentsOf: path, customStrategies: ["severity": .max],
            recordStrategies: ["keepOpen": ClosureRecordStrategy(name: "keepOpen") { $0.proposal }])
        #expect(schema.entities.first?.fields.last?.strategy?.name == "max")
        #expect(schema.entities.first?.recordStrategy?.name == "keepOpen")
        #expect(try SchemaDocument.loadOutline(contentsOf: path).outline.entities.first?.fields.last?.strategy == "severity")
    }
}
