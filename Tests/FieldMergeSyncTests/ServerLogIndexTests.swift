import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
@testable import FieldMergeServer
@testable import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing
import Glibc

/// The server's log is indexed by revision only, and catch-up reads it through that index.
@Suite struct ServerLogIndexTests {
    static func indexes(_ database: Database) throws -> [[SQLValue]] {
        try database.rows(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '__fm_log' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    }

    static func plan(_ database: Database, _ sql: String, entity: String) throws -> String {
        try database.rows("EXPLAIN QUERY PLAN " + sql, [.text(entity), .integer(0), .integer(10)])
            .map { $0.map { "\($0)" }.joined(separator: " ") }.joined(separator: "\n")
    }

    @Test func catchUpWalksTheRevisionIndexAndSortsNothing() throws {
        let schema = try syncSchema()
        let server = try RevisionServer(.memory, schema: schema)
        #expect(try Self.indexes(server.database) == [[.text("__fm_log_revision")]])
        for entity in schema.entities {
            let table = SQLiteServerTable(entity)
            for sql in [table.changedAlive, table.changedDeleted] {
                let plan = try Self.plan(server.database, sql, entity: entity.name)
                // Read by the log's key (entity, id), a page would go through all of the
                // entity's entries; a temporary B-tree would sort what the index has in order.
                #expect(plan.contains("__fm_log_revision"), "\(plan)")
                #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
            }
        }
    }

    @Test func aFileWithTheOldIndexLosesItAndCatchesUpAlike() async throws {
        let path = "/tmp/fm-server-log-\(UInt64.random(in: 0...UInt64.max)).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
        let schema = try syncSchema()
        do {
            let transport = InProcessTransport(server: try RevisionServer(.file(path: path), schema: schema))
            // Requests of four: several revisions in the log.
            let writer = SyncClient(
                store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport, batchSize: 4)
            try await writer.withStore { store in
                for list in 0..<3 {
                    let id = try store.insert("lists", values: [.text("list \(list)")])
                    for task in 0..<4 { try store.insert("tasks", values: [.text("task \(task)"), false, 0, .integer(id)]) }
                }
            }
            _ = try await writer.sync()
            try await writer.withStore { store in
                for row in try store.database.rows("SELECT id FROM tasks ORDER BY id LIMIT 2") {
                    if case .integer(let id)? = row.first { try store.delete("tasks", id: id) }
                }
                guard case .integer(let list)? = try store.database.scalar("SELECT min(id) FROM lists") else {
                    Issue.record("no list")
                    return
                }
                _ = try store.update("lists", id: list, ["name": "renamed"])
            }
            _ = try await writer.sync()
            try await transport.withServer { $0.database.close() }
        }
        do {
            // As a file made by an earlier version has it.
            let database = try Database(.file(path: path))
            try database.execute("CREATE INDEX \"__fm_log_entity\" ON \"__fm_log\" (\"entity\", \"revision\", \"id\")")
            #expect(try Self.indexes(database).count == 2)
            database.close()
        }
        let server = try RevisionServer(.file(path: path), schema: schema)
        #expect(try Self.indexes(server.database) == [[.text("__fm_log_revision")]])
        let transport = InProcessTransport(server: server)
        // Pages of three: catch-up in several windows, with parents brought along.
        let reader = SyncClient(
            store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport, batchSize: 3)
        let summary = try await reader.sync()
        #expect(summary.rounds > 2)
        let expected = try await transport.withServer { try World.contents($0.database, $0.schema) }
        #expect(expected.count == 3 + 10)
        #expect(expected.contains { $0.hasPrefix("lists:") && $0.contains("renamed") })
        #expect(try await reader.withStore { try World.contents($0.database, $0.schema) } == expected)
    }

    @Test func aWindowsEntitiesAreReadAgainAfterEveryWrite() async throws {
        let schema = try syncSchema()
        let storage = try SQLiteServerStorage()
        try await storage.open(schema: schema)
        let lists = ServerEntity(schema.entities[0], position: 0), tasks = ServerEntity(schema.entities[1], position: 1)
        func row(_ id: Int64, revision: Int64) -> ServerRow {
            ServerRow(
                record: Record(entity: "lists", id: id, values: [.text("list \(id)")], stamps: [Stamp(clock: 1 << 16, replica: ReplicaID(1))]),
                revision: revision, created: revision)
        }
        try await storage.write { () async throws in
            try await storage.write(row(1, revision: 1), of: lists)
            #expect(try await storage.changes(lists, after: 0, through: 9).alive.map(\.record.id) == [1])
            #expect(try await storage.changes(tasks, after: 0, through: 9).alive.isEmpty)
            // Within the same transaction and window: what is written since is seen.
            try await storage.write(row(2, revision: 2), of: lists)
            #expect(try await storage.changes(lists, after: 0, through: 9).alive.map(\.record.id) == [1, 2])
            try await storage.delete(lists, id: 1, tombstone: Stamp(clock: 2 << 16, replica: ReplicaID(1)), revision: 3)
            let changes = try await storage.changes(lists, after: 0, through: 9)
            #expect(changes.alive.map(\.record.id) == [2])
            #expect(changes.deleted.map(\.id) == [1])
            try await storage.forgetDeletion(lists, id: 1)
            #expect(try await storage.changes(lists, after: 0, through: 9).deleted.isEmpty)
        }
        // And in the next transaction, as committed.
        try await storage.read { () async throws in
            #expect(try await storage.changes(lists, after: 0, through: 9).alive.map(\.record.id) == [2])
            #expect(try await storage.changes(lists, after: 2, through: 9).alive.isEmpty)
        }
    }
}
