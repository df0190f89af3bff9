import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
@testable import FieldMergeServer
import FieldMergeServerSQLite
import Synchronization
import Foundation
import Testing

/// Nothing keeps a client or a server alive once its owner lets go: a reference cycle
/// would leak the store, its SQLite connection and the codec (LeakSanitizer's report at
/// exit, Specs/reliability.md). Weak references that must be nil once the scope ends.
@Suite struct LifetimeTests {
    @Test func aClientAndItsServerGoAwayAfterSyncing() async throws {
        weak var client: SyncClient?
        weak var transport: InProcessTransport?
        weak var server: RevisionServer?
        do {
            let world = try World(clients: 2)
            (client, transport, server) = (world.clients[0], world.transport, world.transport.server)
            let token = await world.clients[0].addObserver { _ in }
            _ = try await world.clients[0].write { try $0.insert("lists", values: [.text("a")]) }
            _ = try await world.clients[0].sync()
            _ = try await world.clients[1].sync()
            await world.clients[0].removeObserver(token)
            #expect(try await world.contents(world.clients[1]) == world.serverContents())
            #expect(client != nil && server != nil)
        }
        #expect(client == nil)
        #expect(transport == nil)
        #expect(server == nil)
    }

    /// The same with an observer that was never removed: the store's change hook refers
    /// to its client without keeping it.
    @Test func anObserverDoesNotKeepItsClient() async throws {
        weak var client: SyncClient?
        do {
            let world = try World(clients: 1)
            client = world.clients[0]
            let seen = ChangeCount()
            await world.clients[0].addObserver { _ in seen.add() }
            _ = try await world.clients[0].write { try $0.insert("lists", values: [.text("a")]) }
            _ = try await world.clients[0].sync()
            #expect(seen.value >= 1)
        }
        #expect(client == nil)
    }
}

/// Counts calls from any thread.
final class ChangeCount: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// `close()` lets go of the store file at once: the log is in the file, no connection of
/// the client is left on it, and using the client afterwards is a clear error.
@Suite struct CloseTests {
    @Test func afterClose_theFileIsWholeAndNothingOfTheClientTouchesIt() async throws {
        let world = try World(clients: 1)
        _ = try await world.clients[0].write { try $0.insert("lists", values: [.text("on the server")]) }
        _ = try await world.clients[0].sync()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fm-close-\(UInt64.random(in: 0...UInt64.max)).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let client = SyncClient(
            store: try Store(.file(path: path), schema: world.schema, replica: ReplicaID(3)), transport: world.transport)
        _ = try await client.sync()
        _ = try await client.write { try $0.insert("lists", values: [.text("local")]) }
        await client.close()
        // The last connection closed moved the log into the file and removed it.
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try await Task.sleep(for: .milliseconds(50))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        await #expect(throws: SyncError.self) { try await client.sync() }
        let reopened = try Store(.file(path: path), schema: world.schema)
        #expect(try reopened.database.rows("SELECT name FROM lists ORDER BY name").map { $0[0] } == [.text("local"), .text("on the server")])
        #expect(try reopened.pendingChanges().count == 1)
    }
}
