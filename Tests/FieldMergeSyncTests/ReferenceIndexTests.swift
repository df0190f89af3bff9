import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing
import Glibc

/// Reference columns are indexed on both sides, and deletes use the index.
@Suite struct ReferenceIndexTests {
    static func plan(_ database: Database) throws -> String {
        try database.rows("EXPLAIN QUERY PLAN SELECT \"id\" FROM \"tasks\" WHERE \"listID\" = 1")
            .map { $0.map { "\($0)" }.joined(separator: " ") }.joined(separator: "\n")
    }

    @Test func storeAndServerIndexEveryReferenceColumn() async throws {
        let schema = try syncSchema()
        let store = try Store(.memory, schema: schema, replica: ReplicaID(1))
        let server = try RevisionServer(.memory, schema: schema)
        for database in [store.database, server.database] {
            let names = try database.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '__fm_ref_%'")
            #expect(names == [[.text("__fm_ref_tasks_listID")]])
            #expect(try Self.plan(database).contains("__fm_ref_tasks_listID"))
        }
    }
}

/// A server file remembers its schema.
@Suite struct ServerSchemaTests {
    @Test func reopeningWithAnotherSchemaIsAClearErrorAndTheSameSchemaWorks() async throws {
        let path = "/tmp/fm-server-schema-\(UInt64.random(in: 0...UInt64.max)).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
        let schema = try syncSchema()
        do {
            let server = try RevisionServer(.file(path: path), schema: schema)
            server.database.close()
        }
        let same = try RevisionServer(.file(path: path), schema: schema)
        same.database.close()
        let other = try Schema([Entity("lists", fields: [Field("name", .text), Field("colour", .text)])])
        do {
            _ = try RevisionServer(.file(path: path), schema: other)
            Issue.record("opened a file made for another schema")
        } catch {
            #expect(error.message.contains("another schema"))
            #expect(error.message.contains("colour"))
        }
    }
}
