import FieldMerge
import FieldMergeSQLite
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSyncHTTP
import Foundation
import Testing

/// Real clients, real stores on disk, a real server on 127.0.0.1: the whole path.
@Suite struct HTTPRoundTripTests {
    /// Every row of every entity: what must converge.
    static func contents(_ store: Store) throws -> [String] {
        var lines: [String] = []
        for entity in store.schema.entities {
            for row in try store.database.rows("SELECT * FROM \(Database.quote(entity.name)) ORDER BY id") {
                lines.append(entity.name + ":" + row.prefix(entity.fields.count + 1).map { "\($0)" }.joined(separator: "|"))
            }
        }
        return lines
    }

    @Test func twoClientsOnDisk_syncThroughHTTPWithGzip_converge() async throws {
        let schema = try httpTestSchema()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try RevisionServer(.file(path: folder.appendingPathComponent("server.sqlite").path), schema: schema)

        try await withHTTPServer(server) { running in
            let transport = HTTPTransport(url: running.syncURL)
            func client(_ name: String, _ replica: UInt64) throws -> SyncClient {
                let store = try Store(.file(path: folder.appendingPathComponent("\(name).sqlite").path), schema: schema, replica: ReplicaID(replica))
                return SyncClient(store: store, transport: transport, gzip: true)
            }
            let a = try client("a", 0xA), b = try client("b", 0xB)

            // A creates a list with a task (foreign key to a temporary id); B creates its own.
            let taskA = try await a.withStore { store in
                let list = try store.insert("lists", values: ["Home"])
                return try store.insert("tasks", values: ["Milk", false, 1, .integer(list)])
            }
            try await b.withStore { store in _ = try store.insert("lists", values: ["Work"]) }
            let first = try await a.sync()
            #expect(first.sent == 2 && first.conflictingChangeSets == 0)
            _ = try await b.sync()
            _ = try await a.sync()

            // Both edit the same task concurrently: the counter merges, the titles by stamp.
            let permanentTask = try #require(try await a.withStore { try $0.permanentID("tasks", temporary: taskA) })
            try await a.withStore { _ = try $0.update("tasks", id: permanentTask, ["count": 3, "done": true]) }
            try await b.withStore { _ = try $0.update("tasks", id: permanentTask, ["count": 5]) }
            _ = try await a.sync()
            let second = try await b.sync()
            #expect(second.conflictingChangeSets == 1)
            _ = try await a.sync()

            let contentsA = try await a.withStore { try Self.contents($0) }
            let contentsB = try await b.withStore { try Self.contents($0) }
            #expect(contentsA == contentsB)
            #expect(contentsA.count == 3)
            let count = try await a.withStore { try $0.record("tasks", id: permanentTask)?.values[2] }
            #expect(count == .integer(1 + 2 + 4))  // both increments counted
            #expect(try await a.withStore { try $0.pendingChanges().isEmpty })
            #expect(try await b.withStore { try $0.pendingChanges().isEmpty })

            let statistics = running.http.statistics
            #expect(statistics.syncs >= 6 && statistics.rejected == 0)
            #expect(statistics.gzipRequests == statistics.syncs)  // every request went up gzip'd
            #expect(statistics.gzipResponses == statistics.syncs)  // and came back gzip'd
            #expect(running.http.maxRevision == (await running.http.withServer { await $0.maxRevision }))
        }
    }

    @Test func syncIsLoggedWithClientRevisionsAndConflicts() async throws {
        let schema = try httpTestSchema()
        try await withHTTPServer(try RevisionServer(.memory, schema: schema)) { running in
            let store = try Store(.memory, schema: schema, replica: ReplicaID(0xC0FFEE))
            let client = SyncClient(store: store, transport: HTTPTransport(url: running.syncURL))
            try await client.withStore { _ = try $0.insert("lists", values: ["Home"]) }
            _ = try await client.sync()

            let entry = try #require(running.logs.entries.first { $0.message == "sync" })
            #expect(entry.level == .info)
            #expect(entry.metadata["client"] == "c0ffee")
            #expect(entry.metadata["revision.before"]?.description == "0")
            #expect(entry.metadata["revision.after"]?.description == "1")
            #expect(entry.metadata["changeSets.sent"]?.description == "1")
            #expect(entry.metadata["conflicts"]?.description == "0")
            #expect(entry.metadata["refused"]?.description == "0")
            #expect(entry.metadata["duration.ms"] != nil)
        }
    }

    @Test func refusedRecordsAreCountedInTheSyncLogLine() async throws {
        let schema = try httpTestSchema()
        var options = RevisionServer.Options()
        options.authorize = { $0.kind != .create }
        try await withHTTPServer(try RevisionServer(.memory, schema: schema, options: options)) { running in
            let store = try Store(.memory, schema: schema, replica: ReplicaID(0xC0FFEE))
            let client = SyncClient(store: store, transport: HTTPTransport(url: running.syncURL))
            try await client.write { store in for name in ["A", "B", "C"] { _ = try store.insert("lists", values: [.text(name)]) } }
            let summary = try await client.sync()
            #expect(summary.rounds == 1 && summary.refused.count == 3)
            let entries = running.logs.entries.filter { $0.message == "sync" }
            #expect(entries.count == 1)
            #expect(entries.first?.metadata["conflicts"]?.description == "1")
            #expect(entries.first?.metadata["refused"]?.description == "3")
        }
    }
}
