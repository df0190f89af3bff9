import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import Testing

/// The next catch-up page is asked for while the current one is applied.
@Suite struct PrefetchTests {
    /// A world whose server holds 25 lists made in 25 revisions, and a fresh client.
    func world(prefetch: Bool) async throws -> (World, SyncClient) {
        let world = try World(clients: 2, batchSize: 10)
        let writer = world.clients[0]
        for n in 0..<25 {
            _ = try await writer.withStore { try $0.insert("lists", values: [.text("list \(n)")]) }
            _ = try await writer.sync()
        }
        let reader = world.clients[1]
        await reader.setPrefetch(prefetch)
        return (world, reader)
    }

    @Test(arguments: [true, false]) func pagesArriveWholeAndNoRequestIsWasted(prefetch: Bool) async throws {
        let (world, reader) = try await world(prefetch: prefetch)
        let before = await world.transport.requests
        let summary = try await reader.sync()
        #expect(await world.transport.requests - before == 3)
        #expect(summary.rounds == 3 && summary.received == 25)
        #expect(try await world.contents(reader) == world.serverContents())
    }

    @Test func anEditMadeWhileAPageIsPrefetchedIsSentAndNothingIsLost() async throws {
        let (world, reader) = try await world(prefetch: true)
        let editing = EditingTransport(inner: world.transport)
        weak var gone: SyncClient?
        do {
            let client = SyncClient(store: try Store(.memory, schema: world.schema, replica: ReplicaID(9)), transport: editing, batchSize: 10)
            gone = client
            await editing.set(client)
            _ = try await client.sync()
            _ = try await reader.sync()
            let lists = try await world.contents(reader).filter { $0.hasPrefix("lists:") }
            #expect(lists.count == 26)
            #expect(lists.contains { $0.contains("late") })
            #expect(try await client.withStore { try $0.pendingChanges().isEmpty })
            #expect(try await world.contents(client) == world.serverContents())
        }
        // The transport holds its client weakly: a strong reference would be a cycle
        // (client → transport → client) that LeakSanitizer reports at exit.
        #expect(gone == nil)
    }
}

/// Makes a local edit on its client while the second request (the first prefetched page)
/// is on its way.
actor EditingTransport: SyncTransport {
    let inner: InProcessTransport
    /// Weak: the client holds this transport, so a strong reference back would keep both
    /// alive forever.
    weak var client: SyncClient?
    var calls = 0

    init(inner: InProcessTransport) { self.inner = inner }
    func set(_ client: SyncClient) { self.client = client }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        calls += 1
        if calls == 2, let client {
            _ = try await client.withStore { try $0.insert("lists", values: ["late"]) }
        }
        return try await inner.send(body, gzip: gzip)
    }
}

extension SyncClient {
    func setPrefetch(_ on: Bool) { prefetchesPages = on }
}
