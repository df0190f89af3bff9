import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
@testable import FieldMergeSync
import FieldMergeTestSupport
import Synchronization
import Testing

/// Live mode recovers by itself (Specs/live.md §4): a failed sync is tried again without
/// another event or write, and a closing server takes no new subscriber.
@Suite struct LiveRetryTests {
    /// Fails the first `failures` requests, as a network blip would, then passes them on.
    final class FlakyTransport: SyncTransport, Sendable {
        let inner: any SyncTransport
        let left: Mutex<Int>
        init(_ inner: any SyncTransport, failures: Int) {
            self.inner = inner
            left = Mutex(failures)
        }

        func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
            let fails = left.withLock { left in
                defer { left -= 1 }
                return left > 0
            }
            if fails { throw TransportError("the network is down") }
            return try await inner.send(body, gzip: gzip)
        }
    }

    @Test func aFailedSyncIsTriedAgainWithoutAnotherEventOrWrite() async throws {
        let world = try World(clients: 1)
        let store = try Store(.memory, schema: world.schema, replica: ReplicaID(9), wall: ManualWallClock(milliseconds: 1_000_000))
        let client = SyncClient(store: store, transport: FlakyTransport(world.transport, failures: 2))
        var options = LiveOptions()
        (options.debounce, options.initialBackoff) = (.milliseconds(1), .milliseconds(10))
        let outcomes = await client.startLive(over: world.transport, options: options)
        #expect(await LiveSyncTests.connected(outcomes) == 0)
        try await client.write { _ = try $0.insert("lists", values: ["Sent at last"]) }
        // One write, two failed syncs, then the retries alone get it out.
        var failed = 0
        for await outcome in outcomes {
            if case .syncFailed(let error) = outcome {
                #expect(error.isRetryable)
                failed += 1
            }
            if case .synced(let summary, _) = outcome, summary.sent == 1 { break }
        }
        #expect(failed == 2)
        #expect(try await client.withStore { try $0.pendingChanges().isEmpty })
        #expect(try await world.serverContents().contains { $0.hasPrefix("lists:") && $0.contains("Sent at last") })
        await client.stopLive()
    }

    @Test func aClosingServerEndsItsStreamsAndRefusesNewSubscribers() async throws {
        let server = try RevisionServer(.memory, schema: try syncSchema())
        let events = try server.live.subscribe(identity: nil)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == .ready(revision: 0))
        await server.close()
        #expect(await iterator.next() == nil)
        #expect(server.live.subscribers == 0)
        // A device reconnecting to it now would wait forever for an event: it is refused.
        #expect(throws: ServerError.self) { _ = try server.live.subscribe(identity: nil) }
    }
}
