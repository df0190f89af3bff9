import FieldMerge
import FieldMergeSQLiteDriver
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing
import Glibc

/// A server file moves its write-ahead log into the file in the background after each
/// write, instead of leaving it to the commit that passes SQLite's 1,000 pages.
@Suite struct ServerCheckpointTests {
    private static func size(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    @Test func aWriteReachesTheFileWithoutWaitingForTheLogLimit() async throws {
        let path = "/tmp/fm-server-checkpoint-\(UInt64.random(in: 0...UInt64.max)).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
        let server = try RevisionServer(.file(path: path), schema: try syncSchema())
        // The request's own connection checkpoints only as a safety net.
        #expect(try server.database.scalar("PRAGMA wal_autocheckpoint") == .integer(Int64(Checkpointer.storeLimitPages)))
        let before = Self.size(path)
        let stamp = Stamp(milliseconds: 1_700_000_000_000, replica: ReplicaID(7))
        let records = (1...2_000).map { n in
            WireRecord(Record(entity: "lists", id: -Int64(n), values: [.text("list \(n) with a name long enough to fill pages")], stamps: [stamp]))
        }
        let answer = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [
            ChangeSet(entities: [EntityChanges(entity: "lists", create: records.map(\.id), records: records)]),
        ]))
        #expect(answer.changeSets.last?.conflict == false)
        // A few hundred pages, far below the connection's limit: only the background
        // checkpoint copies them into the file.
        var after = Self.size(path)
        for _ in 0..<200 where after <= before + 100_000 {
            try await Task.sleep(for: .milliseconds(50))
            after = Self.size(path)
        }
        #expect(after > before + 100_000, "the file grew from \(before) to \(after) bytes")
        #expect(try server.database.scalar("SELECT count(*) FROM lists") == .integer(2_000))
    }
}
