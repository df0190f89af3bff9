import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
@testable import FieldMergeSync
import FieldMergeTestSupport
import Observation
import Synchronization
import Testing

/// A client's ``SyncState``: what an app's status line shows, as a value, a stream and an
/// observable object.
@Suite struct SyncStateTests {
    /// Collects every state a client publishes, in order.
    final class Recorder: Sendable {
        let seen = Mutex<[SyncState]>([])

        func follow(_ client: SyncClient) async -> Task<Void, Never> {
            let stream = await client.states(bufferingPolicy: .unbounded)
            return Task { for await state in stream { self.seen.withLock { $0.append(state) } } }
        }

        var states: [SyncState] { seen.withLock { $0 } }
    }

    /// A write from outside the main actor.
    static func addList(_ name: String, to client: SyncClient) async throws {
        try await client.write { _ = try $0.insert("lists", values: [.text(name)]) }
    }

    @Test func aSyncIsSeenStartingProgressingAndEnding() async throws {
        let world = try World(clients: 1, batchSize: 2)
        let client = world.clients[0]
        let recorder = Recorder()
        let following = await recorder.follow(client)
        try await client.write { store in
            for name in ["a", "b", "c"] { _ = try store.insert("lists", values: [.text(name)]) }
        }
        #expect(await client.state.unsynced == UnsyncedCount(waiting: 3, keptAside: 0))
        world.walls[0].set(milliseconds: 2_000_000)
        _ = try await client.sync()
        let end = await client.state
        #expect(!end.isSyncing && end.progress == nil && end.lastError == nil)
        #expect(end.lastSynced == 2_000_000)
        #expect(end.unsynced.total == 0)
        let heard = try await LiveSyncTests.eventually { recorder.states.last == end }
        #expect(heard)
        let states = recorder.states
        #expect(states.first?.isSyncing == false && states.first?.lastSynced == nil)
        #expect(states.contains { $0.unsynced.waiting == 3 })
        // Two records per request: the rounds were reported while the sync ran.
        let rounds = states.compactMap { $0.isSyncing ? $0.progress?.round : nil }
        #expect(rounds.count >= 2 && rounds == rounds.sorted())
        following.cancel()
    }

    /// Fails like a network that is down while `offline`, else hands the body to `inner`.
    final class Switchable: SyncTransport {
        let inner: InProcessTransport
        let offline = Mutex(true)
        init(_ inner: InProcessTransport) { self.inner = inner }

        func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
            if offline.withLock({ $0 }) { throw TransportError("offline") }
            return try await inner.send(body, gzip: gzip)
        }
    }

    @Test func aFailedSyncIsTheLastError_untilOneSucceeds() async throws {
        let world = try World(clients: 0)
        let network = Switchable(world.transport)
        let wall = ManualWallClock(milliseconds: 5_000)
        let client = SyncClient(
            store: try Store(.memory, schema: world.schema, replica: ReplicaID(9), wall: wall), transport: network)
        try await client.write { _ = try $0.insert("lists", values: ["Home"]) }
        await #expect(throws: SyncError.self) { try await client.sync() }
        let failed = await client.state
        #expect(failed.lastError?.code == .unreachable && failed.lastSynced == nil && !failed.isSyncing)
        #expect(failed.unsynced.waiting == 1)
        network.offline.withLock { $0 = false }
        wall.set(milliseconds: 6_000)
        _ = try await client.sync()
        let recovered = await client.state
        #expect(recovered.lastError == nil && recovered.lastSynced == 6_000 && recovered.unsynced.total == 0)
    }

    @Test func refusedChangesCountAsKeptAside_andPlainSQLCountsAtOnce() async throws {
        let store = try Store(.memory, schema: try syncSchema(), replica: ReplicaID(3))
        let home = try store.insert("lists", values: ["Home"])
        let work = try store.insert("lists", values: ["Work"])
        try store.park("lists", id: work, code: "restricted", message: "read only")
        #expect(try store.unsyncedCount() == UnsyncedCount(waiting: 1, keptAside: 1))
        try store.database.execute("INSERT INTO lists (id, name) VALUES (-100, 'Plain')")
        #expect(try store.unsyncedCount() == UnsyncedCount(waiting: 2, keptAside: 1))
        #expect(try store.unsyncedCount().total == store.unsyncedChanges().count)
        _ = home
    }

    /// A record created and deleted before any sync leaves nothing to send: the next sync
    /// (or any read of the pending changes) stops counting it. The attachment simulation
    /// found such marks counted for ever.
    @Test func aRecordCreatedAndDeletedBeforeAnySync_stopsCountingOnceTheOutboxIsRead() async throws {
        let world = try World(clients: 1)
        let client = world.clients[0]
        let gone = try await client.write { store in
            let id = try store.insert("lists", values: ["Gone"])
            try store.delete("lists", id: id)
            return id
        }
        #expect(gone < 0)
        #expect(try await client.write { store in try store.unsyncedCount() } == UnsyncedCount(waiting: 1, keptAside: 0))
        let summary = try await client.sync()
        #expect(summary.sent == 0)
        #expect(try await client.write { store in try store.unsyncedCount() } == UnsyncedCount())
        #expect(try await client.write { store in try store.unsyncedChanges() }.isEmpty)
    }

    @MainActor @Test func liveSyncState_isObservable_andFollowsTheClient() async throws {
        let world = try World(clients: 1)
        let client = world.clients[0]
        let live = LiveSyncState(client)
        let notified = Mutex(false)
        withObservationTracking { _ = live.state } onChange: { notified.withLock { $0 = true } }
        try await Self.addList("Home", to: client)
        let counted = try await LiveSyncTests.eventually { @MainActor in live.state.unsynced.waiting == 1 }
        #expect(counted && notified.withLock { $0 })
        _ = try await client.sync()
        let synced = try await LiveSyncTests.eventually { @MainActor in live.state.lastSynced != nil && live.state.unsynced.total == 0 }
        #expect(synced)
        live.cancel()
    }

    @Test func liveModeIsSeenConnectingAndStopping() async throws {
        let world = try World(clients: 1)
        let client = world.clients[0]
        let outcomes = await client.startLive(over: world.transport)
        #expect(await LiveSyncTests.connected(outcomes) == 0)
        let state = await client.state
        #expect(state.isLive && state.isConnected)
        await client.stopLive()
        let stopped = await client.state
        #expect(!stopped.isLive && !stopped.isConnected)
    }
}
