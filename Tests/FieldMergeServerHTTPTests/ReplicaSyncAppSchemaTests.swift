import FieldMerge
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSyncTool
import Foundation
import Testing

/// `ReplicaSync` (what `fieldmerge sync` runs) with the app's own schema: its custom strategy
/// decides the merges, which a schema file could not name.
@Suite struct ReplicaSyncAppSchemaTests {
    /// The shorter text wins a conflict (lastEditWins would keep the later, longer one).
    static func schema() throws -> Schema {
        let shortest = FieldStrategy.custom("shortest") { input in
            guard case .text(let local) = input.local, case .text(let remote) = input.remote else { return input.lastEdit }
            return local.count <= remote.count ? input.local : input.remote
        }
        return try Schema([Entity("notes", fields: [Field("body", .text, strategy: shortest)])])
    }

    static func body(_ path: String) throws -> [SQLValue] {
        let store = try Store(.file(path: path), schema: try schema())
        defer { store.database.close() }
        return try store.database.rows("SELECT body FROM notes").map { $0[0] }
    }

    static func edit(_ path: String, _ sql: String) throws {
        let store = try Store(.file(path: path), schema: try schema())
        defer { store.database.close() }
        try store.database.run(sql)
    }

    @Test func theAppsStrategyDecides() async throws {
        let folder = try SyncCommandTests.Folder()
        defer { folder.remove() }
        let server = try RevisionServer(.file(path: folder.file("server.sqlite")), schema: try Self.schema())
        try await withHTTPServer(server) { running in
            let url = running.syncURL.absoluteString
            let a = ReplicaSyncInput(url: url, replica: folder.file("a.sqlite"), schema: try Self.schema())
            let b = ReplicaSyncInput(url: url, replica: folder.file("b.sqlite"), schema: try Self.schema())
            #expect(await ReplicaSync.run(a).exit == .settled)
            try Self.edit(a.replica, "INSERT INTO notes (body) VALUES ('draft')")
            #expect(await ReplicaSync.run(a).exit == .settled)
            #expect(await ReplicaSync.run(b).exit == .settled)
            // Both edit the note; b's edit is the later and the longer one.
            try Self.edit(a.replica, "UPDATE notes SET body = 'short'")
            #expect(await ReplicaSync.run(a).exit == .settled)
            try Self.edit(b.replica, "UPDATE notes SET body = 'a much longer body'")
            let merged = await ReplicaSync.run(b)
            #expect(merged.exit == .settled && merged.summary.merged >= 1, "\(merged)")
            #expect(await ReplicaSync.run(a).exit == .settled)
            #expect(try Self.body(a.replica) == [.text("short")])
            #expect(try Self.body(b.replica) == [.text("short")])
        }
    }
}
