import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import FieldMergeSync
import PostgresNIO
import Synchronization
import Testing

/// Live sync across server processes on one PostgreSQL data set: a commit through one server
/// reaches the live subscribers of another through its ``PostgresLiveListener``.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresLiveTests {
    let schema: Schema
    init() throws { schema = try postgresSchema() }

    @Test func aWriteThroughOneServerReachesTheSubscribersOfAnother() async throws {
        try await PostgresTestDatabase.with { database in
            try await LiveProcesses.with(database, schema: schema) { a, b in
                let (listener, heard) = b.listen(as: database.url.schema + "_live")
                let events = Collected(try b.server.live.subscribe(identity: nil))
                // Listening (it read the revision once connected): the write's revision can only
                // come as a notification.
                #expect(try await eventually { heard.all == [0] })
                #expect(try await eventually { events.all == [.ready(revision: 0)] })
                let device = SyncClient(
                    store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: InProcessTransport(server: a.server))
                try await device.write { _ = try $0.insert("lists", values: ["Field notes"]) }
                #expect(try await device.sync().sent == 1)
                #expect(try await eventually { events.all.count == 2 })
                guard case .changes(let after, let revision, let json) = events.all.last else {
                    Issue.record("not a page: \(events.all)")
                    return
                }
                #expect(after == 0 && revision == 1)
                let response = try b.server.wireCodec().decodeResponse(json)
                #expect(response.changeSets.flatMap(\.entities).flatMap(\.records).map(\.values) == [[.text("Field notes")]])
                #expect(heard.all == [0, 1])
                await listener.shutdown()
                events.stop()
            }
        }
    }

    /// With the lock, whose revisions have no gaps (writes in parallel announce a rolled-back
    /// write's revisions leaving the watermark).
    @Test func rolledBackAndConflictingWritesAnnounceNothing() async throws {
        try await PostgresTestDatabase.with { database in
            try await LiveProcesses.with(database, schema: schema, order: .locked) { a, b in
                let (listener, heard) = b.listen(as: database.url.schema + "_live")
                let events = Collected(try b.server.live.subscribe(identity: nil))
                #expect(try await eventually { heard.all == [0] })
                _ = try await a.server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("first")]))
                _ = try await a.server.handle(SyncRequest(maxRevision: 1, changeSets: [renameList(1, to: "second", at: 1)]))
                #expect(try await eventually { heard.all == [0, 1, 2] && events.all.last?.revision == 2 })
                let (heardBefore, eventsBefore) = (heard.all.count, events.all.count)
                // The state saved (and announced) in a transaction that then rolls back.
                let storage = try PostgresServerStorage(a.connector, order: .locked)
                do {
                    try await storage.write { () async throws -> Void in
                        try await storage.saveState(ServerState(maxRevision: 1_000, clock: 0))
                        throw RolledBack()
                    }
                    Issue.record("the transaction did not roll back")
                } catch is RolledBack {}
                // A stale rename: a conflict, nothing committed.
                let stale = try await a.server.handle(SyncRequest(maxRevision: 1, changeSets: [renameList(1, to: "stale", at: 1)]))
                #expect(stale.changeSets.last?.conflict == true)
                #expect(stale.maxRevision == 2)
                let created = try await a.server.handle(SyncRequest(maxRevision: 2, changeSets: [createList("third")]))
                #expect(created.maxRevision == 3)
                // Notifications come in commit order: one for 1,000 would come before 3.
                #expect(try await eventually { heard.all.contains(3) })
                #expect(Array(heard.all.dropFirst(heardBefore)) == [3])
                #expect(try await eventually { events.all.last?.revision == 3 })
                let next = events.all.dropFirst(eventsBefore)
                guard next.count == 1, case .changes(let after, let revision, _) = next.first else {
                    Issue.record("not one page: \(Array(next))")
                    return
                }
                #expect(after == 2 && revision == 3)
                await listener.shutdown()
                events.stop()
            }
        }
    }

    @Test func aWriteWhileTheListenerIsDisconnectedArrivesOnceItReconnects() async throws {
        try await PostgresTestDatabase.with { database in
            try await LiveProcesses.with(database, schema: schema) { a, b in
                let name = database.url.schema + "_live"
                var options = PostgresLiveListener.Options()
                // Long enough that a write lands while it is down, even on a loaded machine.
                options.firstDelay = .seconds(6)
                let (listener, heard) = b.listen(as: name, options: options)
                let events = Collected(try b.server.live.subscribe(identity: nil))
                #expect(try await eventually { heard.all == [0] })
                var missed: (revision: Int64, name: String)?
                // The write must commit while no listener connection exists; when the listener
                // is back too soon, the kill and the write are made again.
                for attempt in 1...5 {
                    let pid = try await database.count(
                        "SELECT pid::BIGINT FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend'", name)
                    guard let pid else {
                        #expect(try await eventually { try await database.count("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name) == 1 })
                        continue
                    }
                    try await database.execute("SELECT pg_terminate_backend($1::INT)", pid)
                    #expect(try await eventually {
                        try await database.count("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::INT", pid) == 0
                    })
                    let list = "while down \(attempt)"
                    let response = try await a.server.handle(SyncRequest(maxRevision: 0, changeSets: [createList(list)]))
                    if try await database.count("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name) == 0 {
                        missed = (response.maxRevision, list)
                        break
                    }
                }
                guard let missed else {
                    Issue.record("the listener never stayed disconnected during a write")
                    return
                }
                // No notification reached it: the revision it reads as it reconnects does.
                #expect(try await eventually { heard.all.contains(missed.revision) })
                #expect(try await eventually { events.all.last?.revision == missed.revision })
                guard case .changes(_, let revision, let json) = events.all.last else {
                    Issue.record("not a page: \(events.all)")
                    return
                }
                #expect(revision == missed.revision)
                let response = try b.server.wireCodec().decodeResponse(json)
                #expect(response.changeSets.flatMap(\.entities).flatMap(\.records).map(\.values).last == [.text(missed.name)])
                #expect(try await database.count("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name) == 1)
                await listener.shutdown()
                #expect(try await eventually {
                    try await database.count("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name) == 0
                })
                events.stop()
            }
        }
    }

    @Test func aListenerWhoseConnectionStopsAnsweringConnectsAgain() async throws {
        try await PostgresTestDatabase.with { database in
            try await LiveProcesses.with(database, schema: schema) { a, b in
                let name = database.url.schema + "_beat"
                var options = PostgresLiveListener.Options()
                options.applicationName = name
                // A timeout a loaded test run does not reach by itself (a 400 ms one was, and the
                // listener connected again before the test had looked); the lock below holds the
                // heartbeat for as long as the test wants.
                (options.heartbeat, options.heartbeatTimeout, options.firstDelay) = (.milliseconds(200), .seconds(4), .milliseconds(50))
                let heard = Collected<Int64>()
                let listener = PostgresLiveListener(b.source, options: options) { heard.append($0) }
                let backends = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend'"
                // The revision as it connects, then at every heartbeat.
                #expect(try await eventually { heard.all.count >= 3 })
                // One connection, and its process id.
                var pid: Int64?
                #expect(try await eventually {
                    guard try await database.count(backends, name) == 1 else { return false }
                    pid = try await database.count(
                        "SELECT pid::BIGINT FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend'", name)
                    return pid != nil
                })
                let first = try #require(pid)
                // Its next heartbeat waits behind a lock: the connection stops answering, as one
                // lost without a reset would. The listener gives up on it and connects again.
                let table = "\"\(database.url.schema)\".\"__fm_server\""
                let logger = a.connector.logger
                let locker = try await PostgresConnection.connect(
                    configuration: try a.connector.connectionConfiguration(applicationName: name + "_lock"), id: 99, logger: logger)
                _ = try await locker.query("BEGIN", logger: logger)
                _ = try await locker.query(PostgresQuery(unsafeSQL: "LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE"), logger: logger)
                // (At least two: under load, the new connection's first query may wait behind
                // the lock too, and be given up in turn.)
                #expect(try await eventually { (try await database.count(backends, name) ?? 0) >= 2 })
                _ = try await locker.query("ROLLBACK", logger: logger)
                try await locker.close()
                // One connection again, not the first, and it answers its heartbeats.
                #expect(try await eventually {
                    let now = try await database.count(backends, name)
                    let old = try await database.count("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::INT", first)
                    return now == 1 && old == 0
                })
                let count = heard.all.count
                #expect(try await eventually { heard.all.count >= count + 2 })
                await listener.shutdown()
            }
        }
    }

    @Test func aDataSetWithALongSchemaNameHearsOnAHashedChannel() async throws {
        try await PostgresTestDatabase.with { database in
            var url = database.url
            url.schema = String((url.schema + "_" + String(repeating: "long", count: 16)).prefix(PostgresIdentifier.maxLength))
            do {
                try await LiveProcesses.with(url, schema: schema) { a, b in
                    #expect(b.source.channel.utf8.count == PostgresIdentifier.maxLength)
                    #expect(b.source.channel != PostgresLiveChannel.prefix + url.schema)
                    let (listener, heard) = b.listen(as: database.url.schema + "_live")
                    #expect(try await eventually { heard.all == [0] })
                    _ = try await a.server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("long")]))
                    #expect(try await eventually { heard.all == [0, 1] })
                    await listener.shutdown()
                }
            } catch {
                try? await database.execute("DROP SCHEMA IF EXISTS \"\(url.schema)\" CASCADE")
                throw error
            }
            try await database.execute("DROP SCHEMA IF EXISTS \"\(url.schema)\" CASCADE")
        }
    }

    /// A change set renaming list `id`, which the sender holds at `revision`.
    func renameList(_ id: Int64, to name: String, at revision: Int64) -> ChangeSet {
        let record = WireRecord(id: id, present: FieldMask.all(count: 1), values: [.text(name)], revision: revision)
        return ChangeSet(entities: [EntityChanges(entity: "lists", update: [id], records: [record])])
    }

    struct RolledBack: Error {}
}

/// The channel's name, without a database.
struct PostgresLiveChannelTests {
    @Test func aShortPlainSchemaNamesItsChannel() {
        #expect(PostgresLiveChannel.name(forSchema: "public") == "fieldmerge_public")
        let longest = String(repeating: "a", count: 51)
        #expect(PostgresLiveChannel.name(forSchema: longest) == "fieldmerge_" + longest)
    }

    @Test func otherNamesAreHashedIntoExactly63SafeBytes() {
        let long = String(repeating: "b", count: 52)
        let names = [long, long + "x", long + "y", "Weird-Name\"; DROP", "é", ""]
        let channels = names.map(PostgresLiveChannel.name(forSchema:))
        for channel in channels {
            #expect(channel.utf8.count == 63)
            #expect(channel.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) })
            #expect(channel.hasPrefix(PostgresLiveChannel.prefix))
        }
        #expect(Set(channels).count == names.count)
        #expect(channels[0].hasPrefix("fieldmerge_" + String(repeating: "b", count: 35) + "_"))
        #expect(channels[3].hasPrefix("fieldmerge__eird__ame" + String(repeating: "_", count: 25) + "_"))
    }

    @Test func theHashIsTheSameInEveryProcess() {
        // FNV-1a 64's published values: not a per-process seeded hash.
        #expect(PostgresLiveChannel.fnv1a([]) == 0xcbf2_9ce4_8422_2325)
        #expect(PostgresLiveChannel.fnv1a(Array("a".utf8)) == 0xaf63_dc4c_8601_ec8c)
        #expect(PostgresLiveChannel.name(forSchema: "") == "fieldmerge_" + String(repeating: "_", count: 35) + "_cbf29ce484222325")
    }
}

/// Two server processes on one data set: each its own pool, storage and server.
struct LiveProcesses {
    let connector: PostgresConnector
    let source: PostgresLiveSource
    let server: RevisionServer

    static func with(
        _ database: PostgresTestDatabase, schema: Schema, order: PostgresWriteOrder = .parallel,
        _ body: (LiveProcesses, LiveProcesses) async throws -> Void
    ) async throws {
        try await with(database.url, schema: schema, order: order, body)
    }

    /// Runs `body` with two processes on `url`'s data set, and closes their pools after it.
    static func with(
        _ url: PostgresURL, schema: Schema, order: PostgresWriteOrder = .parallel, _ body: (LiveProcesses, LiveProcesses) async throws -> Void
    ) async throws {
        let connectors = [PostgresConnector(url, applicationName: url.schema), PostgresConnector(url, applicationName: url.schema)]
        do {
            var processes: [LiveProcesses] = []
            for (index, connector) in connectors.enumerated() {
                let storage = try PostgresServerStorage(connector, order: order)
                let source = storage.liveSource
                let server = try await RevisionServer(
                    storage: storage, schema: schema, replica: ReplicaID(UInt64(0x5E00 + index)), wall: ManualWallClock(milliseconds: 1_000_000))
                processes.append(LiveProcesses(connector: connector, source: source, server: server))
            }
            try await body(processes[0], processes[1])
        } catch {
            for connector in connectors { await connector.shutdown() }
            throw error
        }
        for connector in connectors { await connector.shutdown() }
    }

    /// A listener for this server whose connection is named `applicationName`, and every
    /// revision it handed over (each also handed to the server's hub).
    func listen(as applicationName: String, options base: PostgresLiveListener.Options = .init()) -> (PostgresLiveListener, Collected<Int64>) {
        var options = base
        options.applicationName = applicationName
        let heard = Collected<Int64>()
        let hub = server.live
        let listener = PostgresLiveListener(source, options: options) { revision in
            heard.append(revision)
            hub.advance(to: revision)
        }
        return (listener, heard)
    }
}

/// What arrived, in order: handed over, or read from a stream by a task of its own.
final class Collected<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init() {}

    init(_ stream: AsyncStream<Element>) {
        reader.withLock { $0 = Task { [self] in for await item in stream { append(item) } } }
    }

    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var all: [Element] { items.withLock { $0 } }

    /// Stops reading the stream (which ends the subscription).
    func stop() { reader.withLock { $0?.cancel() } }
}

/// Polls `condition` every 10 ms for up to 20 s.
private func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
    for _ in 0..<2_000 {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return false
}
