import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Testing

/// `SyncClient.write { }` is one transaction: all or nothing, savepoints inside, one change
/// event (Specs/store.md, "Operations").
@Suite struct AtomicWriteTests {
    struct Stop: Error {}

    @Test func aThrowInsideWrite_leavesNothing_andSyncsNothing() async throws {
        let world = try World(clients: 1)
        let client = world.clients[0]
        let log = ChangeLog()
        await client.addObserver { log.append($0) }
        await #expect(throws: Stop.self) {
            try await client.write { store in
                let list = try store.insert("lists", values: ["Home"])
                _ = try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
                throw Stop()
            }
        }
        #expect(try await client.withStore { try $0.database.rows("SELECT id FROM lists UNION ALL SELECT id FROM tasks") }.isEmpty)
        #expect(try await client.withStore { try $0.pendingChanges() }.isEmpty)
        #expect(log.changes.isEmpty)
        let summary = try await client.sync()
        #expect(try await world.serverContents().isEmpty)
        #expect(summary.rounds <= 1)
    }

    @Test func aWrite_isOneChangeEvent_andANestedTransactionASavepoint() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        let log = ChangeLog()
        await a.addObserver { log.append($0) }
        try await a.write { store in
            let list = try store.insert("lists", values: ["Home"])
            _ = try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
            try? store.transaction {
                _ = try store.insert("tasks", values: ["Bread", false, 0, .integer(list)])
                throw Stop()
            }
            _ = try store.update("lists", id: list, ["name": "Home 2"])
        }
        #expect(log.changes.count == 1)
        #expect(log.changes.first?.inserted == ["lists": [-1], "tasks": [-2]])
        _ = try await a.sync()
        _ = try await b.sync()
        let server = try await world.serverContents()
        #expect(try await world.contents(b) == server)
        #expect(server.count == 2)
        #expect(server.contains { $0.contains("Home 2") } && server.contains { $0.contains("Milk") })
        #expect(!server.contains { $0.contains("Bread") })
    }
}
