import FieldMerge
import FieldMergeServeCommand
import FieldMergeServerAuth
import FieldMergeSyncTool
import Foundation
import Testing

/// FieldMergeServeCommand: `fieldmerge-serve-example`, an app's ten-line server, serves a
/// schema whose strategy is a Swift closure, which the stock `fieldmerge-server serve`
/// refuses in a schema file; flags that would say again what the app gives are refused.
@Suite struct ServeCommandLibraryTests {
    /// The example's schema: its devices hold the same (ReplicaSyncAppSchemaTests's).
    static func schema() throws -> Schema { try ReplicaSyncAppSchemaTests.schema() }

    /// The server checks each request's schema fingerprint (strategy names included), so it
    /// must serve the app's schema itself; the custom strategy then decides a conflict (on
    /// the device: a stale custom field is a conflict in merge mode too, Specs/protocol.md).
    @Test func anAppsOwnServer_servesItsSwiftSchema_whoseStrategyDecides() async throws {
        let folder = try SyncCommandTests.Folder()
        defer { folder.remove() }
        let serve = try ServeProcess.start(
            ["--port", "0", "--db", folder.file("server.sqlite"), "--mode", "merge"], executable: "fieldmerge-serve-example")
        guard let port = try await serve.port() else {
            Issue.record("fieldmerge-serve-example did not start: \(serve.errors)")
            try await serve.stop(SIGKILL)
            return
        }
        #expect(serve.output.contains("merge mode"), "\(serve.output)")
        let schema = try Self.schema()
        let url = "http://127.0.0.1:\(port)/sync"
        let a = ReplicaSyncInput(url: url, replica: folder.file("a.sqlite"), schema: schema)
        let b = ReplicaSyncInput(url: url, replica: folder.file("b.sqlite"), schema: schema)
        try ReplicaSyncAppSchemaTests.edit(a.replica, "INSERT INTO notes (body) VALUES ('draft')")
        #expect(await ReplicaSync.run(a).exit == .settled)
        #expect(await ReplicaSync.run(b).exit == .settled)
        // Both edit the note; b's edit is the later and the longer one (lastEditWins would keep it).
        try ReplicaSyncAppSchemaTests.edit(a.replica, "UPDATE notes SET body = 'short'")
        #expect(await ReplicaSync.run(a).exit == .settled)
        try ReplicaSyncAppSchemaTests.edit(b.replica, "UPDATE notes SET body = 'a much longer body'")
        let merged = await ReplicaSync.run(b)
        #expect(merged.exit == .settled && merged.summary.merged >= 1, "\(merged)")
        #expect(await ReplicaSync.run(a).exit == .settled)
        #expect(try ReplicaSyncAppSchemaTests.body(b.replica) == [.text("short")])
        #expect(try ReplicaSyncAppSchemaTests.body(a.replica) == [.text("short")])
        // A device on the same fields with the built-in strategy is on another schema.
        let builtIn = try Schema([Entity("notes", fields: [Field("body", .text)])])
        let other = await ReplicaSync.run(ReplicaSyncInput(url: url, replica: folder.file("c.sqlite"), schema: builtIn))
        #expect(other.exit == .protocolError, "\(other)")
        #expect(try await serve.stop() == 0)
    }

    @Test func anAppsOwnServer_refusesASchemaFile() async throws {
        let folder = try SyncCommandTests.Folder()
        defer { folder.remove() }
        let run = try await ServeProcess.run(
            ["--db", folder.file("server.sqlite"), "--schema", folder.schemaFile], executable: "fieldmerge-serve-example")
        #expect(run.status == 64)
        #expect(run.errors.contains("this server serves its app's schema, given in Swift (version 1)"), "\(run.errors)")
        #expect(!FileManager.default.fileExists(atPath: folder.file("server.sqlite")))
    }

    @Test func anAppsOwnServer_hasTheStockFlags_namedAfterItself() async throws {
        let help = try ServeProcess.start(["--help"], executable: "fieldmerge-serve-example")
        #expect(try await help.port() == nil, "--help ended without serving")
        let text = help.output
        help.removeFiles()
        #expect(text.contains("USAGE: fieldmerge-serve-example"), "\(text)")
        for flag in ["--db", "--postgres", "--tenants", "--mode", "--jwks", "--policy", "--metrics", "--live-lifetime", "--seed-records"] {
            #expect(text.contains(flag), "no \(flag) in the help")
        }
    }

    @Test func theStockServer_refusesAFileNamingACustomStrategy_andSaysWhereToServeIt() async throws {
        let folder = try SyncCommandTests.Folder()
        defer { folder.remove() }
        let file = folder.file("notes.json")
        let json = #"{"entities":[{"name":"notes","fields":[{"name":"body","type":"text","strategy":"shortest"}]}]}"#
        try Data(json.utf8).write(to: URL(fileURLWithPath: file))
        let run = try await ServeProcess.run(["serve", "--db", folder.file("server.sqlite"), "--schema", file])
        #expect(run.status == 2)
        #expect(run.errors.contains("bad schema file \(file): $.entities[0].fields[0].strategy: unknown strategy 'shortest'"), "\(run.errors)")
        #expect(run.errors.contains("serve the schema from the app's own executable with FieldMergeServeCommand"))
    }

    /// Parses `serve ARGS` as the app's executable would, with `configuration`.
    static func parse(_ arguments: [String], _ configuration: ServeConfiguration) async -> String? {
        await FieldMergeServe.withConfiguration(configuration) {
            do {
                _ = try ServeCommand.parse(arguments)
                return nil
            } catch {
                return ServeCommand.message(for: error)
            }
        }
    }

    @Test func flagsThatRepeatTheApp_areRefused_andAFileSchemaNeedsAFile() async throws {
        let schema = try Self.schema()
        let policy = AccessPolicy(entities: ["notes": AccessPolicy.Rule(write: ["editor"])])
        #expect(await Self.parse(["--db", "s.sqlite"], ServeConfiguration(schema: .swift(schema))) == nil)
        #expect(await Self.parse(["--db", "s.sqlite", "--policy", "p.json"], ServeConfiguration(schema: .swift(schema))) == nil)
        let byPolicy = await Self.parse(
            ["--db", "s.sqlite", "--policy", "p.json"], ServeConfiguration(schema: .swift(schema), access: .policy(policy)))
        #expect(byPolicy?.contains("--policy p.json: this server's access rules are given in Swift by its app") == true, "\(byPolicy ?? "")")
        let byRules = await Self.parse(
            ["--db", "s.sqlite", "--policy", "p.json"],
            ServeConfiguration(schema: .swift(schema), access: .rules(authorize: { _ in true }, readable: nil, scopes: nil)))
        #expect(byRules?.contains("it reads no policy file") == true)
        let noFile = await Self.parse(["--db", "s.sqlite"], ServeConfiguration(schema: .file()))
        #expect(noFile?.contains("give --schema FILE") == true, "\(noFile ?? "")")
        #expect(await Self.parse(["--db", "s.sqlite"], ServeConfiguration(schema: .file(fallback: schema))) == nil)
    }
}
