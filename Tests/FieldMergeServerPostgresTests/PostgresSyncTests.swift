import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerPostgres
import FieldMergeSync
import Testing

/// Devices syncing through a server on PostgreSQL, each with its own store and wall clock.
struct PostgresWorld {
    let schema: Schema
    let transport: InProcessTransport
    let clients: [SyncClient]
    let walls: [ManualWallClock]

    init(_ database: PostgresTestDatabase, clients count: Int, mode: RevisionServer.Mode = .strict) async throws {
        schema = try postgresSchema()
        transport = InProcessTransport(server: try await database.server(schema, mode: mode))
        var clients: [SyncClient] = [], walls: [ManualWallClock] = []
        for index in 0..<count {
            let wall = ManualWallClock(milliseconds: 1_000_000)
            let store = try Store(.memory, schema: schema, replica: ReplicaID(UInt64(index + 1)), wall: wall)
            clients.append(SyncClient(store: store, transport: transport))
            walls.append(wall)
        }
        self.clients = clients
        self.walls = walls
    }

    /// Every record of `client`'s store as "entity:id|values", sorted by entity and id.
    func contents(_ client: SyncClient) async throws -> [String] {
        try await client.withStore { store in
            var lines: [String] = []
            for entity in store.schema.entities {
                for row in try store.database.rows("SELECT * FROM \(Database.quote(entity.name)) ORDER BY id") {
                    lines.append(entity.name + ":" + row.prefix(entity.fields.count + 1).map { "\($0)" }.joined(separator: "|"))
                }
            }
            return lines
        }
    }

    /// Syncs every client twice, then a new device from nothing: all must hold what it
    /// received (the server's data set). Returns that.
    func converge() async throws -> [String] {
        for _ in 0..<2 { for client in clients { _ = try await client.sync() } }
        let fresh = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(99)), transport: transport)
        _ = try await fresh.sync()
        let expected = try await contents(fresh)
        for client in clients {
            #expect(try await contents(client) == expected)
            #expect(try await client.withStore { try $0.pendingChanges().isEmpty })
        }
        return expected
    }
}

@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresSyncTests {
    @Test func everyFieldTypeTravelsThroughPostgres() async throws {
        try await PostgresTestDatabase.with { database in
            let world = try await PostgresWorld(database, clients: 2)
            let (a, b) = (world.clients[0], world.clients[1])
            try await a.withStore { store in
                let list = try store.insert("lists", values: ["Home \"quoted\" 'text' é"])
                try store.insert("tasks", values: [
                    "Milk", true, 3, .integer(list), .date(1_391_256_923_487), .real(2.5), .textSet(["b", "a"]), .blob([0, 1, 255]),
                ])
                try store.insert("tasks", values: ["Nulls", nil, nil, nil, nil, nil, nil, nil])
            }
            let summary = try await a.sync()
            #expect(summary.sent == 3)
            _ = try await b.sync()
            let contents = try await world.converge()
            #expect(contents == [
                "lists:integer(1)|text(\"Home \\\"quoted\\\" \\'text\\' é\")",
                "tasks:integer(1)|text(\"Milk\")|integer(1)|integer(3)|integer(1)|integer(1391256923487)|real(2.5)|text(\"[\\\"a\\\",\\\"b\\\"]\")|blob([0, 1, 255])",
                "tasks:integer(2)|text(\"Nulls\")|null|null|null|null|null|null|null",
            ])
        }
    }

    @Test func mergeMode_staleUpdateOfOtherFieldsMerges_countersStillNeedARound() async throws {
        try await PostgresTestDatabase.with { database in
            let world = try await PostgresWorld(database, clients: 2, mode: .merge)
            let (a, b) = (world.clients[0], world.clients[1])
            try await a.withStore { store in _ = try store.insert("tasks", values: ["Tally", false, 0, nil, nil, nil, nil, nil]) }
            _ = try await a.sync()
            _ = try await b.sync()
            try await a.withStore { store in _ = try store.update("tasks", id: 1, ["title": "Tally A"]) }
            try await b.withStore { store in _ = try store.update("tasks", id: 1, ["done": true]) }
            _ = try await a.sync()
            #expect(try await b.sync().conflictingChangeSets == 0)
            // Counters need the ancestor: the server answers a conflict, the client merges and resends.
            try await a.withStore { store in _ = try store.update("tasks", id: 1, ["count": 2]) }
            try await b.withStore { store in _ = try store.update("tasks", id: 1, ["count": 3]) }
            _ = try await a.sync()
            #expect(try await b.sync().conflictingChangeSets == 1)
            let contents = try await world.converge()
            #expect(contents == ["tasks:integer(1)|text(\"Tally A\")|integer(1)|integer(5)|null|null|null|null|null"])
        }
    }

    @Test func deleteCascadesAndWinsAgainstAnEdit() async throws {
        try await PostgresTestDatabase.with { database in
            let world = try await PostgresWorld(database, clients: 2)
            let (a, b) = (world.clients[0], world.clients[1])
            try await a.withStore { store in
                let list = try store.insert("lists", values: ["Home"])
                try store.insert("tasks", values: ["Milk", false, 0, .integer(list), nil, nil, nil, nil])
                try store.insert("tasks", values: ["Loose", false, 0, nil, nil, nil, nil, nil])
            }
            _ = try await a.sync()
            _ = try await b.sync()
            try await a.withStore { store in try store.delete("lists", id: 1) }
            try await b.withStore { store in _ = try store.update("tasks", id: 1, ["title": "edited"]) }
            _ = try await a.sync()
            _ = try await b.sync()
            let contents = try await world.converge()
            #expect(contents == ["tasks:integer(2)|text(\"Loose\")|integer(0)|integer(0)|null|null|null|null|null"])
        }
    }

    @Test func deleteThenRecreateOfOneId_leavesItAlive() async throws {
        try await PostgresTestDatabase.with { database in
            let world = try await PostgresWorld(database, clients: 2)
            let (a, b) = (world.clients[0], world.clients[1])
            try await a.withStore { store in _ = try store.insert("lists", values: ["Home"]) }
            _ = try await a.sync()
            _ = try await b.sync()
            try await a.withStore { store in
                try store.delete("lists", id: 1)
                try store.insert("lists", id: 1, values: ["Again"])
            }
            _ = try await a.sync()
            let contents = try await world.converge()
            #expect(contents == ["lists:integer(1)|text(\"Again\")"])
        }
    }

    /// Every refused record of a request in one answer, on PostgreSQL too: 8 refused edits
    /// are set aside in one round (8 records uploaded once, not 8 + 7 + … + 1).
    @Test func eightRefusedUpdates_areAnsweredInOneRound() async throws {
        try await PostgresTestDatabase.with { database in
            let schema = try postgresSchema()
            var options = RevisionServer.Options()
            options.authorize = { $0.kind != .update }
            let transport = InProcessTransport(server: try await database.server(schema, options: options))
            let viewer = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
            try await viewer.write { store in for index in 1...8 { _ = try store.insert("lists", values: [.text("List \(index)")]) } }
            _ = try await viewer.sync()
            try await viewer.write { store in for id in Int64(1)...8 { _ = try store.update("lists", id: id, ["name": .text("E\(id)")]) } }
            let before = transport.requests
            let summary = try await viewer.sync()
            #expect(transport.requests - before == 1 && summary.rounds == 1)
            #expect(summary.sent == 8 && summary.refused.count == 8)
            #expect(try await viewer.write { try $0.unsyncedChanges() }.filter { $0.refusal != nil }.count == 8)
        }
    }
}
