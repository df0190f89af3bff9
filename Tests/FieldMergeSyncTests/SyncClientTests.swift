import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import Synchronization
import FieldMergeTestSupport
import Testing

/// A server and clients in one process, each client with its own store and wall clock.
struct World {
    let schema: Schema
    let transport: InProcessTransport
    var clients: [SyncClient] = []
    var walls: [ManualWallClock] = []

    init(clients count: Int, batchSize: Int = 10_000, mode: RevisionServer.Mode = .strict) throws {
        schema = try syncSchema()
        var options = RevisionServer.Options()
        options.mode = mode
        transport = InProcessTransport(server: try RevisionServer(
            .memory, schema: schema, options: options, wall: ManualWallClock(milliseconds: 1_000_000)))
        for index in 0..<count {
            let wall = ManualWallClock(milliseconds: 1_000_000)
            let store = try Store(.memory, schema: schema, replica: ReplicaID(UInt64(index + 1)), wall: wall)
            clients.append(SyncClient(store: store, transport: transport, batchSize: batchSize))
            walls.append(wall)
        }
    }

    /// Every record of every entity as (entity, id, values), sorted: what must converge.
    static func contents(_ database: Database, _ schema: Schema) throws -> [String] {
        var lines: [String] = []
        for entity in schema.entities {
            for row in try database.rows("SELECT * FROM \(Database.quote(entity.name)) ORDER BY id") {
                lines.append(entity.name + ":" + row.prefix(entity.fields.count + 1).map { "\($0)" }.joined(separator: "|"))
            }
        }
        return lines
    }

    func contents(_ client: SyncClient) async throws -> [String] {
        try await client.withStore { try Self.contents($0.database, $0.schema) }
    }

    func serverContents() async throws -> [String] {
        try await transport.withServer { try Self.contents($0.database, $0.schema) }
    }

    /// Syncs every client in turn, twice, and checks that all agree with the server.
    func converge() async throws -> [String] {
        for _ in 0..<2 { for client in clients { _ = try await client.sync() } }
        let expected = try await serverContents()
        for client in clients {
            #expect(try await contents(client) == expected)
            #expect(try await client.withStore { try $0.pendingChanges().isEmpty })
        }
        return expected
    }
}

@Suite struct SyncClientTests {
    @Test func createsTravelWithPermanentIdsAndForeignKeys() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in
            let list = try store.insert("lists", values: ["Home"])
            try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
        }
        let summary = try await a.sync()
        #expect(summary.sent == 2 && summary.rounds == 1)
        _ = try await b.sync()
        let rows = try await b.withStore { try $0.database.rows("SELECT t.title, l.name FROM tasks t JOIN lists l ON l.id = t.listID") }
        #expect(rows == [[.text("Milk"), .text("Home")]])
        let ids = try await a.withStore { try $0.database.rows("SELECT id, listID FROM tasks") }
        #expect(ids == [[.integer(1), .integer(1)]])
        _ = try await world.converge()
    }

    @Test func differentFieldsOnTwoClients_bothSurvive() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("tasks", values: ["Milk", false, 0, nil]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await a.withStore { store in _ = try store.update("tasks", id: 1, ["title": "Oat milk"]) }
        try await b.withStore { store in _ = try store.update("tasks", id: 1, ["done": true]) }
        _ = try await a.sync()
        let summary = try await b.sync()
        #expect(summary.conflictingChangeSets == 1)
        let contents = try await world.converge()
        #expect(contents == ["tasks:integer(1)|text(\"Oat milk\")|integer(1)|integer(0)|null"])
    }

    @Test(arguments: [true, false])
    func sameFieldOnTwoClients_newerEditWinsWhicheverSyncsFirst(_ newerSyncsFirst: Bool) async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("tasks", values: ["Milk", false, 0, nil]) }
        _ = try await a.sync()
        _ = try await b.sync()
        world.walls[0].advance(by: 1_000)
        try await a.withStore { store in _ = try store.update("tasks", id: 1, ["title": "older"]) }
        world.walls[1].advance(by: 2_000)
        try await b.withStore { store in _ = try store.update("tasks", id: 1, ["title": "newer"]) }
        if newerSyncsFirst { _ = try await b.sync(); _ = try await a.sync() } else { _ = try await a.sync(); _ = try await b.sync() }
        let contents = try await world.converge()
        #expect(contents.first?.contains("newer") == true)
    }

    @Test func equalClockValues_sameResultOnEveryReplica() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("tasks", values: ["Milk", false, 0, nil]) }
        _ = try await a.sync()
        _ = try await b.sync()
        for wall in world.walls { wall.set(milliseconds: 5_000_000) }
        try await a.withStore { store in _ = try store.update("tasks", id: 1, ["title": "from A"]) }
        try await b.withStore { store in _ = try store.update("tasks", id: 1, ["title": "from B"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        let contents = try await world.converge()
        // Equal clock values: replica 2 (B) has the larger id and wins everywhere.
        #expect(contents.first?.contains("from B") == true)
    }

    @Test func nullAgainstAValue_newerWins() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("tasks", values: ["Milk", false, 0, nil]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await a.withStore { store in _ = try store.update("tasks", id: 1, ["title": "Bread"]) }
        world.walls[1].advance(by: 5_000)
        try await b.withStore { store in _ = try store.update("tasks", id: 1, ["title": nil]) }
        _ = try await a.sync()
        _ = try await b.sync()
        let contents = try await world.converge()
        #expect(contents == ["tasks:integer(1)|null|integer(0)|integer(0)|null"])
    }

    @Test func counterIncrementsOnTwoClients_bothCount() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("tasks", values: ["Tally", false, 0, nil]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await a.withStore { store in _ = try store.update("tasks", id: 1, ["count": 2]) }
        try await b.withStore { store in _ = try store.update("tasks", id: 1, ["count": 3]) }
        _ = try await a.sync()
        _ = try await b.sync()
        let contents = try await world.converge()
        #expect(contents == ["tasks:integer(1)|text(\"Tally\")|integer(0)|integer(5)|null"])
    }

    @Test func deleteAgainstAnEdit_deleteWinsEverywhere() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("tasks", values: ["Milk", false, 0, nil]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await a.withStore { store in try store.delete("tasks", id: 1) }
        try await b.withStore { store in _ = try store.update("tasks", id: 1, ["title": "edited"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        let contents = try await world.converge()
        #expect(contents.isEmpty)
    }

    @Test func childCreatedWithAConflictingParentEdit_isNotLost() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await b.withStore { store in _ = try store.update("lists", id: 1, ["name": "House"]) }
        _ = try await b.sync()
        // A renames the list on a stale revision and adds a task to it in the same change set.
        try await a.withStore { store in
            _ = try store.update("lists", id: 1, ["name": "Flat"])
            try store.insert("tasks", values: ["Paint", false, 0, 1])
        }
        let summary = try await a.sync()
        #expect(summary.conflictingChangeSets >= 1)
        let contents = try await world.converge()
        #expect(contents.contains { $0.contains("Paint") })
    }

    @Test func deleteThenRecreateOfOneId_leavesItAlive() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        try await a.withStore { store in
            try store.delete("lists", id: 1)
            try store.insert("lists", id: 1, values: ["Home again"])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        let contents = try await world.converge()
        #expect(contents == ["lists:integer(1)|text(\"Home again\")"])
    }

    @Test func clientOfflineFor10000Revisions_catchesUpInPages() async throws {
        let world = try World(clients: 2, batchSize: 1_000)
        let (a, b) = (world.clients[0], world.clients[1])
        for chunk in 0..<10 {
            try await a.withStore { store in
                for n in 0..<1_000 { _ = try store.insert("lists", values: [.text("list \(chunk * 1_000 + n)")]) }
            }
            _ = try await a.sync()
        }
        let reports = Mutex<[SyncProgress]>([])
        let summary = try await b.sync { progress in reports.withLock { $0.append(progress) } }
        #expect(summary.received == 10_000)
        #expect(summary.rounds >= 10)
        let seen = reports.withLock { $0 }
        #expect(seen.count == summary.rounds)
        #expect(seen.map(\.received) == seen.map(\.received).sorted() && seen.last?.received == 10_000)
        #expect(seen.dropLast().allSatisfy(\.hasMore) && seen.last?.hasMore == false)
        let count = try await b.withStore { try $0.database.scalar("SELECT count(*) FROM lists") }
        #expect(count == .integer(10_000))
    }

    @Test func threeClientsEditingAtRandom_converge() async throws {
        let world = try World(clients: 3)
        var random = SeededRandom(seed: 99)
        try await world.clients[0].withStore { store in
            for n in 0..<20 { _ = try store.insert("tasks", values: [.text("t\(n)"), false, 0, nil]) }
        }
        _ = try await world.converge()
        for _ in 0..<6 {
            for (index, client) in world.clients.enumerated() {
                let edits = (0..<5).map { _ in (id: Int64(random.below(20)) + 1, field: random.below(3), value: random.below(1_000)) }
                world.walls[index].advance(by: Int64(random.below(50)))
                try await client.withStore { store in
                    for edit in edits where try store.record("tasks", id: edit.id)?.isDeleted == false {
                        switch edit.field {
                        case 0: _ = try store.update("tasks", id: edit.id, ["title": .text("v\(edit.value)")])
                        case 1: _ = try store.update("tasks", id: edit.id, ["done": .bool(edit.value % 2 == 0)])
                        default: _ = try store.update("tasks", id: edit.id, ["count": .integer(Int64(edit.value))])
                        }
                    }
                }
                if random.below(2) == 0 { _ = try await client.sync() }
            }
        }
        let contents = try await world.converge()
        #expect(contents.count == 20)
    }
}

struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func below(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}

/// Delivers requests, but loses the first `lose` answers after the server has committed.
actor LosingTransport: SyncTransport {
    let inner: InProcessTransport
    var lose: Int
    init(_ inner: InProcessTransport, lose: Int) { self.inner = inner; self.lose = lose }
    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        let answer = try await inner.send(body, gzip: gzip)
        if lose > 0 { lose -= 1; throw TransportError("connection reset after the server answered") }
        return answer
    }
}

@Suite struct SyncRetryTests {
    @Test func retryAfterALostResponse_createsNothingTwiceAndGetsTheSameAnswer() async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let lossy = LosingTransport(server, lose: 1)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: lossy)
        try await client.withStore { store in
            let list = try store.insert("lists", values: ["Home"])
            try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
        }
        let failure = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(failure?.code == .unreachable && failure?.isRetryable == true && failure?.cause is TransportError)
        // Nothing changed locally: the creates are still pending under their temporary ids.
        #expect(try await client.withStore { try $0.pendingChanges().map(\.id) } == [-1, -2])
        _ = try await client.sync()
        let counts = try await server.withServer { server in
            [try server.database.scalar("SELECT count(*) FROM lists"), try server.database.scalar("SELECT count(*) FROM tasks")]
        }
        #expect(counts == [.integer(1), .integer(1)])
        #expect(await server.withServer { await $0.maxRevision } == 1)
        #expect(try await client.withStore { try $0.pendingChanges().isEmpty })
        #expect(try await client.withStore { try $0.database.rows("SELECT id, listID FROM tasks") } == [[.integer(1), .integer(1)]])
    }
}

@Suite struct SyncRefusalTests {
    /// A create the server will not take is kept aside with the reason, reported, and not
    /// sent again until the app retries it; giving it up removes it.
    @Test func aRefusedCreate_isKeptAsideWithItsReason() async throws {
        let schema = try syncSchema()
        var options = RevisionServer.Options()
        options.authorize = { change in !(change.entity == "lists" && change.kind == .create) }
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        try await client.write { store in _ = try store.insert("lists", values: ["Forbidden"]) }
        let summary = try await client.sync()
        #expect(summary.rounds == 1)
        #expect(summary.refused.map(\.code) == ["unauthorized"])
        #expect(summary.refused.first?.entity == "lists" && summary.refused.first?.id == -1)
        let unsynced = try await client.write { try $0.unsyncedChanges() }
        #expect(unsynced.map(\.kind) == [.create])
        #expect(unsynced.first?.refusal?.code == "unauthorized")
        #expect(try await client.write { try $0.pendingChanges() }.isEmpty)
        // Not sent again by itself...
        let again = try await client.sync()
        #expect(again.sent == 0 && again.refused.isEmpty)
        // ...but on retry (refused again here), and gone when discarded.
        try await client.write { try $0.retry("lists", id: -1) }
        #expect(try await client.sync().refused.count == 1)
        try await client.write { try $0.discard("lists", id: -1) }
        #expect(try await client.write { try $0.unsyncedChanges() }.isEmpty)
        #expect(try await client.write { try $0.record("lists", id: -1) } == nil)
        #expect(await transport.withServer { await $0.maxRevision } == 0)
    }

    /// The exact complaint: one refused record blocked every later change of the device.
    /// Now the refused update waits aside (its local value kept), and everything else,
    /// including changes made later, reaches the server.
    @Test func oneRefusedRecord_neverBlocksTheRest() async throws {
        let schema = try syncSchema()
        var options = RevisionServer.Options()
        options.authorize = { change in !(change.entity == "lists" && change.id == 1 && change.kind == .update) }
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        let b = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport)
        try await a.write { store in
            _ = try store.insert("lists", values: ["One"])
            _ = try store.insert("lists", values: ["Two"])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        try await b.write { store in
            _ = try store.update("lists", id: 1, ["name": "One, renamed"])
            _ = try store.update("lists", id: 2, ["name": "Two, renamed"])
        }
        let summary = try await b.sync()
        #expect(summary.refused.map { "\($0.entity)#\($0.id) \($0.code)" } == ["lists#1 unauthorized"])
        try await b.write { store in _ = try store.insert("tasks", values: ["Later", false, 0, .integer(2)]) }
        _ = try await b.sync()
        _ = try await a.sync()
        let onA = try await a.read { try $0.database.rows("SELECT name FROM lists ORDER BY id") }
        #expect(onA == [[.text("One")], [.text("Two, renamed")]])
        #expect(try await a.read { try $0.database.scalar("SELECT title FROM tasks") } == .text("Later"))
        // B keeps its refused edit, visible and listed.
        #expect(try await b.read { try $0.database.scalar("SELECT name FROM lists WHERE id = 1") } == .text("One, renamed"))
        #expect(try await b.write { try $0.unsyncedChanges() }.map { "\($0.entity)#\($0.id)" } == ["lists#1"])
        // Discarding takes the server's version back.
        try await b.write { try $0.discard("lists", id: 1) }
        #expect(try await b.read { try $0.database.scalar("SELECT name FROM lists WHERE id = 1") } == .text("One"))
    }

    /// Deleting a record whose update the server refused replaces the refused change: the
    /// delete is sent with the next sync (the server decides it anew), nothing stays aside.
    @Test func deletingARefusedRecord_sendsTheDelete() async throws {
        let schema = try syncSchema()
        var options = RevisionServer.Options()
        options.authorize = { change in !(change.entity == "lists" && change.kind == .update) }
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema, options: options))
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        try await a.write { store in _ = try store.insert("lists", values: ["One"]) }
        _ = try await a.sync()
        try await a.write { store in _ = try store.update("lists", id: 1, ["name": "One, renamed"]) }
        #expect(try await a.sync().refused.count == 1)
        try await a.write { try $0.delete("lists", id: 1) }
        #expect(try await a.write { try $0.unsyncedChanges() }.map { "\($0.entity)#\($0.id) \($0.kind) \($0.refusal == nil)" }
            == ["lists#1 delete true"])
        let summary = try await a.sync()
        #expect(summary.refused.isEmpty && summary.sent == 1)
        #expect(try await a.write { try $0.unsyncedChanges() }.isEmpty)
        let b = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport)
        _ = try await b.sync()
        #expect(try await b.read { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(0))
    }
}
