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

/// A prefetched page asks for the page after it as soon as its head arrived, before it is
/// decoded; the page after that waits until this one is applied.
@Suite struct FollowerTests {
    func world() async throws -> (World, SyncClient) {
        let world = try World(clients: 2, batchSize: 10)
        let writer = world.clients[0]
        for n in 0..<25 {
            _ = try await writer.withStore { try $0.insert("lists", values: [.text("list \(n)")]) }
            _ = try await writer.sync()
        }
        return (world, world.clients[1])
    }

    @Test func eachPrefetchedPageSendsOneRequestForTheNext_andTheLastNone() async throws {
        let (world, reader) = try await world()
        let before = await world.transport.requests
        let first = try await reader.prefetch(after: 0, follower: nil).task.value
        let (firstPage, firstPieces) = first.read()
        #expect(firstPieces == [10])
        #expect(firstPage.hasMore)
        let second = try #require(first.follower)
        #expect(second.maxRevision == firstPage.maxRevision)
        // The follower's request is sent from its own task, which may not have reached the
        // transport yet: wait for its answer before counting.
        _ = try await second.task.value
        #expect(await world.transport.requests - before == 2)
        // The follower is taken as it is: no second request for the same page.
        let page2 = try await reader.prefetch(after: second.maxRevision, follower: second).task.value
        let (page2Page, page2Pieces) = page2.read()
        #expect(page2Page.hasMore)
        let third = try #require(page2.follower)
        let page3 = try await reader.prefetch(after: third.maxRevision, follower: third).task.value
        let (page3Page, page3Pieces) = page3.read()
        #expect(!page3Page.hasMore)
        #expect(page3.follower == nil)
        #expect(await world.transport.requests - before == 3)
        #expect((firstPieces + page2Pieces + page3Pieces).reduce(0, +) == 25)
    }

    @Test func aFollowerAskedFromAnotherRevision_isCancelledAndNotUsed() async throws {
        let (world, reader) = try await world()
        let stray = Task<SyncClient.Arrival, any Error> {
            try await Task.sleep(for: .seconds(60))
            return SyncClient.Arrival(answer: [], bytesSent: 0, head: nil)
        }
        let page = try await reader.prefetch(after: 0, follower: .init(maxRevision: 999, task: stray)).task.value
        #expect(stray.isCancelled)
        #expect(page.read().pieces == [10])
        page.follower?.task.cancel()
        _ = world
    }

    /// A server that writes `maxRevision` elsewhere than first: no head, no follower, and the
    /// sync is the same, one page after another.
    @Test func answersWithoutAHead_syncAsBefore() async throws {
        let (world, _) = try await world()
        let spaced = RewritingTransport(inner: world.transport) { _, json in [json[0], UInt8(ascii: " ")] + json.dropFirst() }
        let client = SyncClient(store: try Store(.memory, schema: world.schema, replica: ReplicaID(7)), transport: spaced, batchSize: 10)
        let summary = try await client.sync()
        #expect(summary.received == 25 && summary.rounds == 3)
        #expect(await spaced.calls == 3)
        #expect(try await world.contents(client) == world.serverContents())
    }

    /// An answer whose head is whole but whose body is not: the page fails, the request
    /// its head sent for the next page is dropped, and the next sync gets everything.
    @Test func aPageThatFailsToDecodeAfterItsHead_dropsItsFollower() async throws {
        let (world, _) = try await world()
        let cut = RewritingTransport(inner: world.transport) { call, json in call == 2 ? Array(json.prefix(json.count / 2)) : json }
        let client = SyncClient(store: try Store(.memory, schema: world.schema, replica: ReplicaID(8)), transport: cut, batchSize: 10)
        await #expect(throws: SyncError.self) { try await client.sync() }
        #expect(try await client.withStore { $0.maxRevision } == 10)
        let summary = try await client.sync()
        #expect(summary.received == 15)
        #expect(try await world.contents(client) == world.serverContents())
    }
}

/// Hands each answer (inflated, sent on uncompressed) through `rewrite(call, json)`.
actor RewritingTransport: SyncTransport {
    let inner: InProcessTransport
    let rewrite: @Sendable (Int, [UInt8]) -> [UInt8]
    var calls = 0

    init(inner: InProcessTransport, rewrite: @escaping @Sendable (Int, [UInt8]) -> [UInt8]) {
        self.inner = inner
        self.rewrite = rewrite
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        calls += 1
        let call = calls
        let answer = try await inner.send(body, gzip: gzip)
        return rewrite(call, try Gzip.decompressIfGzip(answer, limit: 1 << 30))
    }
}
