import FieldMerge
import FieldMergeJSON
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeTestSupport
import Foundation
import Testing

/// `fieldmerge admin` as a process (Specs/cli.md): stats, backup and restore of a server's
/// SQLite data set, and refusals that change nothing.
@Suite struct AdminExecutableTests {
    struct Folder {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fm-admin-\(UUID().uuidString)").path
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        func file(_ name: String) -> String { path + "/" + name }
        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    /// A server file with three lists made by one device, one of them deleted; the server
    /// stays open (its file has a write-ahead log) until `body` returns.
    static func withDataSet(_ path: String, device: String, _ body: (SyncClient) async throws -> Void) async throws {
        let server = try RevisionServer(.file(path: path), schema: try syncSchema())
        let client = SyncClient(
            store: try Store(.file(path: device), schema: try syncSchema(), replica: ReplicaID(0xABC)), transport: InProcessTransport(server: server))
        try await client.write { store in for name in ["Home", "Work", "Old"] { _ = try store.insert("lists", values: [.text(name)]) } }
        _ = try await client.sync()
        try await client.write { store in try store.delete("lists", id: 3) }
        _ = try await client.sync()
        try await body(client)
        await client.close()
        await server.close()
    }

    static func stats(_ db: String) throws -> JSONValue {
        let run = try runFieldmerge(try requireFieldmergeExecutable(), ["admin", "stats", "--db", db, "--json"])
        #expect(run.status == 0, "\(run.stderrText)")
        return try JSONValue.parse(run.stdout)
    }

    static func lists(_ stats: JSONValue) -> JSONValue? {
        guard case .array(let entities)? = stats["entities"] else { return nil }
        return entities.first { $0["name"] == .string("lists") }
    }

    @Test func statsBackupAndRestore_whileAndAfterServing() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let (db, copy) = (folder.file("server.sqlite"), folder.file("backup.sqlite"))
        let fieldmerge = try requireFieldmergeExecutable()
        let device = folder.file("device.sqlite")
        try await Self.withDataSet(db, device: device) { client in
            // While the server serves: stats and an online backup.
            let stats = try Self.stats(db)
            #expect(stats["revision"] == .integer(2))
            #expect(Self.lists(stats)?["records"] == .integer(2) && Self.lists(stats)?["tombstones"] == .integer(1))
            #expect(stats["storedReplies"] == .integer(1))
            guard case .array(let devices)? = stats["devices"] else { Issue.record("no devices"); return }
            #expect(devices.map { $0["client"] } == [.string("abc")])
            let text = try runFieldmerge(fieldmerge, ["admin", "stats", "--db", db])
            #expect(String(decoding: text.stdout, as: UTF8.self).contains("schema version 1, revision 2"))

            let backup = try runFieldmerge(fieldmerge, ["admin", "backup", "--db", db, "--to", copy])
            #expect(backup.status == 0, "\(backup.stderrText)")
            #expect(String(decoding: backup.stdout, as: UTF8.self).contains("revision 2, 2 records"))
            #expect(try Self.stats(copy)["revision"] == .integer(2))
            // A second backup to the same file is refused, and the copy is left as it was.
            let again = try runFieldmerge(fieldmerge, ["admin", "backup", "--db", db, "--to", copy])
            #expect(again.status == 1 && again.stderrText.contains("exists; a backup never overwrites a file"))

            // The data set moves on after the backup.
            try await client.write { store in _ = try store.insert("lists", values: ["Later"]) }
            _ = try await client.sync()
            #expect(try Self.stats(db)["revision"] == .integer(3))
            // Not while a server has the file open.
            let open = try runFieldmerge(fieldmerge, ["admin", "restore", "--from", copy, "--db", db, "--replace"])
            #expect(open.status == 1 && open.stderrText.contains("-wal exists"), "\(open.stderrText)")
        }
        // The server stopped: without --replace the data set is kept; with it, the backup is put back.
        let kept = try runFieldmerge(fieldmerge, ["admin", "restore", "--from", copy, "--db", db])
        #expect(kept.status == 1 && kept.stderrText.contains("restore with --replace"))
        #expect(try Self.stats(db)["revision"] == .integer(3))
        let restored = try runFieldmerge(fieldmerge, ["admin", "restore", "--from", copy, "--db", db, "--replace"])
        #expect(restored.status == 0, "\(restored.stderrText)")
        let after = try Self.stats(db)
        #expect(after["revision"] == .integer(2) && Self.lists(after)?["records"] == .integer(2))
        // A server opens the restored file and serves it; a device that saw revision 3 of the
        // data set before the restore is told to reset, not left to skip revision 3 to come.
        let server = try RevisionServer(.file(path: db), schema: try syncSchema())
        #expect(await server.maxRevision == 2)
        let ahead = SyncClient(store: try Store(.file(path: device), schema: try syncSchema()), transport: InProcessTransport(server: server))
        #expect(await ahead.inspect { $0.maxRevision } == 3)
        do {
            _ = try await ahead.sync()
            Issue.record("a device ahead of the data set synced")
        } catch {
            #expect(error.code == .rejected && "\(error)".contains("restored from a backup"), "\(error)")
        }
        await ahead.close()
        await server.close()
    }

    @Test func aFileThatIsNotADataSet_isRefused_andNothingIsCreated() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let fieldmerge = try requireFieldmergeExecutable()
        let missing = folder.file("missing.sqlite")
        let run = try runFieldmerge(fieldmerge, ["admin", "stats", "--db", missing])
        #expect(run.status == 1 && run.stderrText.contains("does not exist"))
        #expect(!FileManager.default.fileExists(atPath: missing))
        let other = folder.file("other.sqlite")
        let database = try Database(.file(path: other))
        try database.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        database.close()
        let notOurs = try runFieldmerge(fieldmerge, ["admin", "stats", "--db", other])
        #expect(notOurs.status == 1 && notOurs.stderrText.contains("is not a FieldMerge server's data set"), "\(notOurs.stderrText)")
        let copy = folder.file("copy.sqlite")
        let backup = try runFieldmerge(fieldmerge, ["admin", "backup", "--db", other, "--to", copy])
        #expect(backup.status == 1)
        #expect(!FileManager.default.fileExists(atPath: copy))
    }

    @Test func compact_dryRunFirst_thenWhileServing() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let db = folder.file("server.sqlite")
        let fieldmerge = try requireFieldmergeExecutable()
        try await Self.withDataSet(db, device: folder.file("device.sqlite")) { client in
            // Revision 1 was marked when it committed; revision 2 (the delete) came within the minute.
            let byAge = try runFieldmerge(fieldmerge, ["admin", "compact", "--db", db, "--older-than-days", "0", "--apply"])
            #expect(byAge.status == 0, "\(byAge.stderrText)")
            #expect(String(decoding: byAge.stdout, as: UTF8.self).contains("removed 0 tombstones and 0 departures through revision 1"))
            let dry = try runFieldmerge(fieldmerge, ["admin", "compact", "--db", db, "--through", "2"])
            #expect(dry.status == 0, "\(dry.stderrText)")
            #expect(String(decoding: dry.stdout, as: UTF8.self).contains("dry run: would remove 1 tombstones and 0 departures through revision 2"))
            #expect(String(decoding: dry.stdout, as: UTF8.self).contains("devices below revision 2 would download the data set again"))
            #expect(Self.lists(try Self.stats(db))?["tombstones"] == .integer(1))
            let applied = try runFieldmerge(fieldmerge, ["admin", "compact", "--db", db, "--through", "2", "--apply"])
            #expect(applied.status == 0, "\(applied.stderrText)")
            #expect(String(decoding: applied.stdout, as: UTF8.self).contains("removed 1 tombstones and 0 departures through revision 2 in 1 batches; horizon now 2"))
            let after = try Self.stats(db)
            #expect(Self.lists(after)?["tombstones"] == .integer(0) && after["logEntries"] == .integer(2))
            // The server, still open, serves on: the device stands at the horizon.
            try await client.write { store in _ = try store.insert("lists", values: ["New"]) }
            let summary = try await client.sync()
            #expect(summary.rebase == nil && summary.sent == 1)
        }
        // Both kinds of horizon, or neither: a usage error, nothing changed.
        for arguments in [["--through", "1", "--older-than-days", "1"], []] {
            let run = try runFieldmerge(fieldmerge, ["admin", "compact", "--db", db] + arguments)
            #expect(run.status == 64 && run.stderrText.contains("exactly one of"), "\(run.stderrText)")
        }
    }
}
