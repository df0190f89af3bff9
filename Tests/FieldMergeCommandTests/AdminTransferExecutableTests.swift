import FieldMerge
import FieldMergeJSON
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeTestSupport
import Foundation
import Testing

/// `fieldmerge admin export`, `import` and `copy` as processes (through fieldmerge-server):
/// a data set moved while its server serves, then served to the same device without a
/// reset; broken input and occupied targets refused, nothing left behind.
@Suite struct AdminTransferExecutableTests {
    @Test func exportImportAndCopy_whileServing_thenTheSameDeviceSyncsOn() async throws {
        let folder = try AdminExecutableTests.Folder()
        defer { folder.remove() }
        let fieldmerge = try requireFieldmergeExecutable()
        let schemaFile = folder.file("schema.json")
        try SchemaDocument.encode(try syncSchema()).rendered().write(toFile: schemaFile, atomically: true, encoding: .utf8)
        let (db, dump, imported, copied) = (folder.file("server.sqlite"), folder.file("dump.jsonl"), folder.file("imported.sqlite"), folder.file("copied.sqlite"))
        let device = folder.file("device.sqlite")
        try await AdminExecutableTests.withDataSet(db, device: device) { _ in
            let export = try runFieldmerge(fieldmerge, ["admin", "export", "--db", db, "--schema", schemaFile, "--to", dump])
            #expect(export.status == 0, "\(export.stderrText)")
            #expect(export.stderrText.contains("at revision 2") && export.stderrText.contains("2 records (lists 2)"), "\(export.stderrText)")
            let again = try runFieldmerge(fieldmerge, ["admin", "export", "--db", db, "--schema", schemaFile, "--to", dump])
            #expect(again.status == 1 && again.stderrText.contains("never overwrites"))
            let copy = try runFieldmerge(fieldmerge, ["admin", "copy", "--from-db", db, "--to-db", copied, "--schema", schemaFile])
            #expect(copy.status == 0, "\(copy.stderrText)")
        }
        let load = try runFieldmerge(fieldmerge, ["admin", "import", "--db", imported, "--schema", schemaFile, "--from", dump])
        #expect(load.status == 0, "\(load.stderrText)")
        // Both new data sets hold exactly what the original held.
        let original = try Data(contentsOf: URL(fileURLWithPath: dump))
        for file in [imported, copied] {
            let run = try runFieldmerge(fieldmerge, ["admin", "export", "--db", file, "--schema", schemaFile])
            #expect(run.status == 0 && run.stdout == original, "\(file): \(run.stderrText)")
        }
        #expect(String(decoding: original, as: UTF8.self).split(separator: "\n").count > 4)

        // The device that synced with the original syncs on with the copy: no reset, its edit taken.
        let server = try RevisionServer(.file(path: copied), schema: try syncSchema())
        let client = SyncClient(store: try Store(.file(path: device), schema: try syncSchema()), transport: InProcessTransport(server: server))
        try await client.write { store in _ = try store.insert("lists", values: ["After the move"]) }
        let summary = try await client.sync()
        #expect(summary.rebase == nil)
        #expect(await server.maxRevision == 3)
        #expect(await client.inspect { $0.maxRevision } == 3)
        await client.close()
        await server.close()
    }

    @Test func brokenInput_andOccupiedTargets_areRefused_leavingNothing() async throws {
        let folder = try AdminExecutableTests.Folder()
        defer { folder.remove() }
        let fieldmerge = try requireFieldmergeExecutable()
        let schemaFile = folder.file("schema.json")
        try SchemaDocument.encode(try syncSchema()).rendered().write(toFile: schemaFile, atomically: true, encoding: .utf8)
        let db = folder.file("server.sqlite")
        await (try RevisionServer(.file(path: db), schema: try syncSchema())).close()
        let dump = folder.file("dump.jsonl")
        #expect(try runFieldmerge(fieldmerge, ["admin", "export", "--db", db, "--schema", schemaFile, "--to", dump]).status == 0)
        let lines = try String(contentsOfFile: dump, encoding: .utf8).split(separator: "\n").map(String.init)

        let cases: [(String, String, String)] = [
            ("truncated", lines.dropLast().joined(separator: "\n"), "ends before its last line"),
            ("not JSON", lines[0] + "\n{\"table\":\n" + lines[1...].joined(separator: "\n"), "line 2: not JSON"),
            ("wrong kind", lines[0] + "\n{\"table\":\"__fm_server\",\"row\":[\"maxRevision\",\"seven\"]}\n" + lines[1...].joined(separator: "\n"),
             "__fm_server.value: expected integer"),
            ("unknown table", lines[0] + "\n{\"table\":\"sqlite_master\",\"row\":[]}\n" + lines[1...].joined(separator: "\n"), "no table \"sqlite_master\""),
        ]
        for (name, text, message) in cases {
            let broken = folder.file(name + ".jsonl")
            try text.write(toFile: broken, atomically: true, encoding: .utf8)
            let target = folder.file(name + ".sqlite")
            let run = try runFieldmerge(fieldmerge, ["admin", "import", "--db", target, "--schema", schemaFile, "--from", broken])
            #expect(run.status == 1 && run.stderrText.contains(message), "\(name): \(run.stderrText)")
            #expect(!FileManager.default.fileExists(atPath: target), "\(name) left \(target)")
        }
        // An existing file is never a target; a missing source is said so.
        let occupied = try runFieldmerge(fieldmerge, ["admin", "import", "--db", db, "--schema", schemaFile, "--from", dump])
        #expect(occupied.status == 1 && occupied.stderrText.contains("never overwrites"))
        let missing = try runFieldmerge(fieldmerge, ["admin", "copy", "--from-db", folder.file("none.sqlite"), "--to-db", folder.file("x.sqlite"), "--schema", schemaFile])
        #expect(missing.status == 1 && missing.stderrText.contains("does not exist"))
        #expect(!FileManager.default.fileExists(atPath: folder.file("x.sqlite")))
    }
}
