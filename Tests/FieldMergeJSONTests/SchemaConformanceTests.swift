import FieldMerge
import FieldMergeJSON
import FieldMergeTestSupport
import Foundation
import Testing

// The conformance vectors of Specs/schema.md, "Evolution": every file in
// Specs/conformance/schema/ holds an "old" and a "new" schema document (or "cases" of them)
// and "expected": the change list (each change's text and whether it is safe) and what a
// file made with the old schema does when opened with the new one ("migrates", "unchanged",
// or "refused: " and a part of the message); or "expected": {"invalid": message} when the
// new document is no valid schema (its reading fails with that message).

let schemaVectorDirectory = conformanceDirectory.deletingLastPathComponent().appendingPathComponent("schema")

let schemaVectorFiles: [String] =
    ((try? FileManager.default.contentsOfDirectory(atPath: schemaVectorDirectory.path)) ?? [])
    .filter { $0.hasSuffix(".json") }
    .sorted()

@Suite struct SchemaConformanceTests {
    @Test func theVectorsAreThere() {
        #expect(schemaVectorFiles.count >= 6)
    }

    @Test(arguments: schemaVectorFiles)
    func vector(_ file: String) throws {
        let document = try JSONValue.parse(Data(contentsOf: schemaVectorDirectory.appendingPathComponent(file)))
        let cases: [JSONValue] = if case .array(let list)? = document["cases"] { list } else { [document] }
        #expect(!cases.isEmpty)
        for (index, vector) in cases.enumerated() {
            let label = "\(file) case \(index + 1)"
            let old = try SchemaDocument.decode(try #require(vector["old"], "\(label): no old"))
            let expected = try #require(vector["expected"], "\(label): no expected")
            if case .string(let invalid)? = expected["invalid"] {
                // The new schema is not a valid schema at all: it is refused when read.
                do {
                    _ = try SchemaDocument.decode(try #require(vector["new"], "\(label): no new"))
                    Issue.record("\(label): the new schema was read; expected it refused: \(invalid)")
                } catch {
                    #expect("\(error)".contains(invalid), "\(label): \(error)")
                }
                continue
            }
            let new = try SchemaDocument.decode(try #require(vector["new"], "\(label): no new"))
            let changes = SchemaOutline(old).changes(to: SchemaOutline(new))
            guard case .array(let listed)? = expected["changes"] else { Issue.record("\(label): no expected changes"); continue }
            let wanted = listed.map { entry -> String in
                let text = if case .string(let text)? = entry["change"] { text } else { "?" }
                let safe = entry["safe"] == .bool(true)
                return "\(safe ? "safe" : "unsafe") \(text)"
            }
            #expect(changes.map { "\($0.isSafe ? "safe" : "unsafe") \($0)" } == wanted, "\(label)")
            guard case .string(let plan)? = expected["plan"] else { Issue.record("\(label): no expected plan"); continue }
            let outcome: String
            do {
                let steps = try SchemaMigration.plan(lines: SchemaOutline(old).lines, version: old.version, to: new)
                outcome = steps.isEmpty ? "unchanged" : "migrates"
            } catch {
                outcome = "refused: " + error.message
            }
            if plan.hasPrefix("refused: ") {
                #expect(outcome.hasPrefix("refused: ") && outcome.contains(plan.dropFirst(9)), "\(label): \(outcome)")
            } else {
                #expect(outcome == plan, "\(label)")
            }
        }
    }
}
