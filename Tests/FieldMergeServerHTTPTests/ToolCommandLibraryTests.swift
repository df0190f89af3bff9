import FieldMerge
import FieldMergeToolCommands
import Foundation
import Testing

/// FieldMergeToolCommands: `sync` and `schema diff` under the app's Swift schema, as an app's
/// own tool runs them (``FieldMergeTool``). `sync` is parsed here, not run: its run sets the
/// process's SIGINT and SIGTERM handling (for `--live`), which other tests of this process
/// rely on; the sync itself is `ReplicaSync` with the app's schema (ServeCommandLibraryTests).
@Suite struct ToolCommandLibraryTests {
    /// The error `arguments` give `command` (nil when they parse), under `schema` when given.
    static func refusal(_ arguments: [String], schema: Schema?, sync: Bool = true) async -> String? {
        func parse() -> String? {
            do {
                if sync { _ = try SyncCommand.parse(arguments) } else { _ = try SchemaCommand.Diff.parse(arguments) }
                return nil
            } catch {
                return sync ? SyncCommand.message(for: error) : SchemaCommand.Diff.message(for: error)
            }
        }
        guard let schema else { return parse() }
        return await FieldMergeTool.withSchema(schema) { parse() }
    }

    @Test func aSchemaFile_isRefusedUnderTheAppsSchema_andNeededWithout() async throws {
        let schema = try ServeCommandLibraryTests.schema()
        let sync = ["--url", "http://127.0.0.1:1/sync", "--replica", "r.sqlite"]
        #expect(await Self.refusal(sync, schema: schema) == nil)
        let twice = await Self.refusal(sync + ["--schema", "s.json"], schema: schema)
        #expect(twice?.contains("--schema s.json: this tool syncs under its app's schema, given in Swift (version 1)") == true, "\(twice ?? "")")
        #expect(await Self.refusal(sync, schema: nil)?.contains("give --schema FILE") == true)
        #expect(await Self.refusal(["old.json"], schema: schema, sync: false) == nil)
        #expect(await Self.refusal(["old.json"], schema: nil, sync: false)?.contains("give the schema file of the new version") == true)
    }

    @Test func schemaDiff_comparesAFileWithTheAppsSchema() async throws {
        let folder = try SyncCommandTests.Folder()
        defer { folder.remove() }
        let schema = try ServeCommandLibraryTests.schema()
        let same = folder.file("same.json"), more = folder.file("more.json")
        let body = #"{"name":"body","type":"text","strategy":"shortest"}"#
        try Data(#"{"entities":[{"name":"notes","fields":[\#(body)]}]}"#.utf8).write(to: URL(fileURLWithPath: same))
        try Data(#"{"entities":[{"name":"notes","fields":[\#(body),{"name":"title","type":"text"}]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: more))
        // The same outline (the custom strategy by name): migratable. The app's schema lacks
        // a field of the file at the same version: not.
        try await FieldMergeTool.withSchema(schema) {
            try SchemaCommand.Diff.parse([same]).run()
            let unsafe = #expect(throws: (any Error).self) { try SchemaCommand.Diff.parse([more]).run() }
            #expect(unsafe.map { SchemaCommand.Diff.exitCode(for: $0).rawValue } == 1, "\(String(describing: unsafe))")
        }
    }
}
