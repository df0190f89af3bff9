import FieldMergeTestSupport
import Foundation
import Testing

/// `fieldmerge schema diff` as a process (Specs/schema.md): it compares schema files that
/// name an app's own strategies without the app's code.
@Suite struct SchemaDiffExecutableTests {
    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fm-diff-\(UUID().uuidString).json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func schema(version: Int, strategy: String, note: Bool) -> String {
        let extra = note ? #", {"name": "note", "type": "text"}"# : ""
        return """
            {"version": \(version), "entities": [{"name": "findings", "recordStrategy": "keepOpen", "fields": [
              {"name": "severity", "type": "integer", "strategy": "\(strategy)"}\(extra)]}]}
            """
    }

    @Test func customStrategyNames_areComparedByName() throws {
        let old = try Self.file(Self.schema(version: 1, strategy: "severity", note: false))
        let new = try Self.file(Self.schema(version: 2, strategy: "severity", note: true))
        let renamed = try Self.file(Self.schema(version: 3, strategy: "severityV2", note: true))
        defer { for path in [old, new, renamed] { try? FileManager.default.removeItem(atPath: path) } }
        let executable = try requireFieldmergeExecutable()
        let added = try runFieldmerge(executable, ["schema", "diff", old, new])
        #expect(added.status == 0, "\(added.stderrText)")
        let text = String(decoding: added.stdout, as: UTF8.self)
        #expect(text.hasPrefix("schema version 1 -> 2: 1 change"), "\(text)")
        #expect(text.contains("note"))
        let changed = try runFieldmerge(executable, ["schema", "diff", new, renamed])
        let changedText = String(decoding: changed.stdout, as: UTF8.self)
        #expect(changedText.contains("severityV2"), "\(changedText) \(changed.stderrText)")
        let same = try runFieldmerge(executable, ["schema", "diff", new, new])
        #expect(same.status == 0 && String(decoding: same.stdout, as: UTF8.self).contains("no changes"))
    }

    @Test func aFileThatIsNotASchema_exitsWith2() throws {
        let bad = try Self.file(#"{"entities": [{"name": "x", "fields": [{"name": "a", "type": "colour"}]}]}"#)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let run = try runFieldmerge(try requireFieldmergeExecutable(), ["schema", "diff", bad, bad])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("unknown field type 'colour'"), "\(run.stderrText)")
    }
}
