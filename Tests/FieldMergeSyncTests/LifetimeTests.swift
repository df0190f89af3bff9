import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
@testable import FieldMergeServer
import Synchronization
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
