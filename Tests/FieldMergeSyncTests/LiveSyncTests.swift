import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Synchronization
import Testing

/// Live sync in one process (Specs/live.md): the hub's events, and clients in live mode over
/// the in-process channel.
@Suite struct LiveSyncTests {
    /// Polls `condition` every 10 ms for up to 20 s.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<2_000 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    static func lists(_ client: SyncClient) async throws -> [String] {
        try await client.read { store in
            try store.database.rows("SELECT name FROM lists ORDER BY id").map { row in
                if case .text(let name) = row[0] { return name }
                return "\(row[0])"
            }
        }
    }

    /// Waits for live mode's first `connected`.
    static func connected(_ outcomes: AsyncStream<LiveOutcome>) async -> Int64? {
        for await outcome in outcomes { if case .connected(let revision) = outcome { return revision } }
        return nil
    }

    @Test func aChangeArrivesWithoutARequest() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        let outcomes = await b.startLive(over: world.transport)
        #expect(await Self.connected(outcomes) == 0)
        try await a.write { _ = try $0.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        let sent = world.transport.requests
        let ok = try await Self.eventually { try await Self.lists(b) == ["Home"] }
        #expect(ok)
        // b received the list in the channel's event: no request of its own.
        #expect(world.transport.requests == sent)
        #expect(await b.withStore { $0.maxRevision } == 1)
        var applied = false
        for await outcome in outcomes {
            if case .applied(let summary, let revision) = outcome {
                applied = summary.received == 1 && summary.rounds == 0 && revision == 1
                break
            }
        }
        #expect(applied)
        await b.stopLive()
        #expect(await !b.isLive)
    }

    @Test func aWriteBetweenCatchUpAndSubscriptionIsNotMissed() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        _ = try await b.sync()
        try await a.write { _ = try $0.insert("lists", values: ["Between"]) }
        _ = try await a.sync()
        // b subscribes after the write: the channel's first event says the server is ahead.
        let outcomes = await b.startLive(over: world.transport)
        #expect(await Self.connected(outcomes) == 1)
        #expect(try await Self.eventually { try await Self.lists(b) == ["Between"] })
        await b.stopLive()
    }

    @Test func localWritesGoOutAndReachOtherLiveDevices() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        let first = await a.startLive(over: world.transport)
        let second = await b.startLive(over: world.transport)
        _ = await (Self.connected(first), Self.connected(second))
        try await a.write { _ = try $0.insert("lists", values: ["From a"]) }
        try await b.write { _ = try $0.insert("lists", values: ["From b"]) }
        #expect(try await Self.eventually {
            let (left, right) = (try await Self.lists(a), try await Self.lists(b))
            return left.count == 2 && left == right
        })
        #expect(try await world.serverContents() == world.contents(a))
        #expect(try await a.withStore { try $0.pendingChanges().isEmpty })
        await a.stopLive()
        await b.stopLive()
    }

    @Test func aBurstReachesEveryDeviceAndSyncsDoNotPileUp() async throws {
        let world = try World(clients: 4)
        let writer = world.clients[0]
        var streams: [AsyncStream<LiveOutcome>] = []
        for client in world.clients.dropFirst() { streams.append(await client.startLive(over: world.transport)) }
        for stream in streams { _ = await Self.connected(stream) }
        let before = world.transport.requests
        for index in 0..<100 {
            try await writer.write { _ = try $0.insert("lists", values: [.text("L\(index)")]) }
            _ = try await writer.sync()
        }
        let expected = try await world.serverContents()
        for client in world.clients.dropFirst() {
            #expect(try await Self.eventually { try await world.contents(client) == expected })
        }
        // 100 requests of the writer; the three others mostly applied what the channel
        // brought (a sync only where an event found the store elsewhere).
        let requests = world.transport.requests - before
        #expect(requests >= 100 && requests < 100 + 3 * 100)
        for client in world.clients.dropFirst() { await client.stopLive() }
    }

    @Test func aSubscriberThatDoesNotReadKeepsOnlyTheNewestEvents() async throws {
        var options = RevisionServer.Options()
        options.live.buffer = 4
        options.live.minInterval = .zero
        let server = try RevisionServer(.memory, schema: try syncSchema(), options: options)
        let events = try server.live.subscribe(identity: nil)
        let client = SyncClient(store: try Store(.memory, schema: server.schema, replica: ReplicaID(7)), transport: InProcessTransport(server: server))
        for index in 1...20 {
            try await client.write { _ = try $0.insert("lists", values: [.text("L\(index)")]) }
            _ = try await client.sync()
            #expect(try await Self.eventually { server.live.revision == Int64(index) && server.live.isIdle })
        }
        var received: [LiveEvent] = []
        for await event in events {
            received.append(event)
            if received.count == 4 { break }
        }
        // The ready and the first 16 pages were dropped; the newest four are whole pages.
        #expect(received.map(\.revision) == [17, 18, 19, 20])
        if case .changes(let after, let revision, _) = received[0] { #expect(after == 16 && revision == 17) } else { Issue.record("not a page") }
    }

    @Test func aBurstOfCommitsIsReadInFewSteps() async throws {
        var options = RevisionServer.Options()
        options.live.minInterval = .milliseconds(300)
        let server = try RevisionServer(.memory, schema: try syncSchema(), options: options)
        var events = try server.live.subscribe(identity: nil, takesPages: true).makeAsyncIterator()
        #expect(await events.next() == .ready(revision: 0))
        let writer = SyncClient(store: try Store(.memory, schema: server.schema, replica: ReplicaID(5)), transport: InProcessTransport(server: server))
        let start = ContinuousClock.now
        for index in 1...10 {
            try await writer.write { _ = try $0.insert("lists", values: [.text("L\(index)")]) }
            _ = try await writer.sync()
        }
        let writing = ContinuousClock.now - start
        var received: [LiveEvent] = []
        while let event = await events.next() {
            received.append(event)
            if event.revision == 10 { break }
        }
        // The first commit is read at once; later ones at most one step per interval (on a
        // loaded machine the writes take longer and allow more steps, never more than that).
        let allowed = 2 + Int(writing / .milliseconds(300))
        #expect(server.live.steps <= allowed && received.count - 1 <= allowed)
        if case .changes(_, 10, _)? = received.last {} else { Issue.record("no page to 10: \(received)") }
    }

    @Test func aDeviceHearsOnlyOfWhatItMayRead() async throws {
        var options = RevisionServer.Options()
        options.readable = { identity, entity in identity?.user != "viewer" || entity != "tasks" }
        let server = try RevisionServer(.memory, schema: try syncSchema(), options: options)
        var events = try server.live.subscribe(identity: SyncIdentity(user: "viewer")).makeAsyncIterator()
        #expect(await events.next() == .ready(revision: 0))
        let writer = SyncClient(store: try Store(.memory, schema: server.schema, replica: ReplicaID(8)), transport: InProcessTransport(server: server))
        try await writer.write { _ = try $0.insert("tasks", values: ["Hidden", false, 0, .null]) }
        _ = try await writer.sync()
        #expect(try await Self.eventually { server.live.revision == 1 && server.live.isIdle })
        try await writer.write { _ = try $0.insert("lists", values: ["Seen"]) }
        _ = try await writer.sync()
        // One event, for revision 2, starting where the device was told last (0): revision 1
        // held nothing it may read.
        guard case .changes(let after, let revision, let json)? = await events.next() else {
            Issue.record("no page")
            return
        }
        #expect(after == 0 && revision == 2)
        let response = try WireCodec(schema: server.schema).decodeResponse(json)
        #expect(response.changeSets.flatMap(\.entities).map(\.entity) == ["lists"])
    }

    @Test func aDeviceOfAnOlderVersionIsPokedNotSentPages() async throws {
        let server = try RevisionServer(.memory, schema: try syncSchema())
        var events = try server.live.subscribe(identity: nil, takesPages: false).makeAsyncIterator()
        #expect(await events.next() == .ready(revision: 0))
        let writer = SyncClient(store: try Store(.memory, schema: server.schema, replica: ReplicaID(9)), transport: InProcessTransport(server: server))
        try await writer.write { _ = try $0.insert("lists", values: ["New"]) }
        _ = try await writer.sync()
        #expect(await events.next() == .poke(revision: 1))
    }

    @Test func scopedDevicesArePokedOnlyForTheirScope() async throws {
        // Projects One and Two have ids 1 and 2, on the server and on the admin's device.
        let (server, admin) = try await LiveScopedPageTests.world()
        var events = try server.live.subscribe(identity: SyncIdentity(user: "ann")).makeAsyncIterator()
        #expect(await events.next() == .ready(revision: 1))
        #expect(try await Self.eventually { server.live.isIdle })
        try await LiveScopedPageTests.addTask("elsewhere", project: 2, by: admin)
        #expect(try await Self.eventually { server.live.revision == 2 && server.live.isIdle })
        try await LiveScopedPageTests.addTask("mine", project: 1, by: admin)
        // Nothing for revision 2 (project Two); a poke for revision 3 (project One).
        #expect(await events.next() == .poke(revision: 3))
        // Ann joins Two: her grants grow, and she is told (to sync and receive its records).
        try await admin.write { _ = try $0.insert("memberships", values: [.text("ann"), .integer(2)]) }
        _ = try await admin.sync()
        #expect(await events.next() == .poke(revision: 4))
    }
}
