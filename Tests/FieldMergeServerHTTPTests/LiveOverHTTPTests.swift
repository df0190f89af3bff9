import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
import FieldMergeSyncTool
import Foundation
import Logging
import Synchronization
import Testing

/// Live sync end to end over HTTP (Specs/live.md): devices in live mode with the HTTP
/// channel, a server that restarts, and `fieldmerge sync --live`'s logic.
@Suite struct LiveOverHTTPTests {
    static func lists(_ client: SyncClient) async throws -> [String] {
        try await client.read { store in
            try store.database.rows("SELECT name FROM lists ORDER BY id").map { row in
                if case .text(let name) = row[0] { return name }
                return "?"
            }
        }
    }

    static func device(_ url: URL, replica: UInt64) throws -> SyncClient {
        SyncClient(store: try Store(.memory, schema: try httpTestSchema(), replica: ReplicaID(replica)), transport: HTTPTransport(url: url))
    }

    /// `device`'s live outcomes over a channel of `kind`, past its first (`connected` at 0);
    /// nil, with an issue recorded, when that is not what comes first.
    static func connectedOutcomes(
        of device: SyncClient, over kind: HTTPLiveChannelTests.Kind, _ url: URL
    ) async throws -> AsyncStream<LiveOutcome>.AsyncIterator? {
        var iterator = await device.startLive(over: try kind.channel(url)).makeAsyncIterator()
        guard case .connected(0)? = await iterator.next() else {
            Issue.record("not connected")
            return nil
        }
        return iterator
    }

    @Test(arguments: HTTPLiveChannelTests.Kind.allCases)
    func aDeviceReceivesAChangeWithoutCallingSync(kind: HTTPLiveChannelTests.Kind) async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let (reader, writer) = (try Self.device(running.syncURL, replica: 1), try Self.device(running.syncURL, replica: 2))
            guard var iterator = try await Self.connectedOutcomes(of: reader, over: kind, running.syncURL) else { return }
            try await writer.write { _ = try $0.insert("lists", values: ["Pushed"]) }
            _ = try await writer.sync()
            let syncsBefore = running.http.statistics.syncs
            #expect(try await LiveWait.eventually { try await Self.lists(reader) == ["Pushed"] })
            // Applied from the event stream: the reader sent no request.
            guard case .applied(let summary, 1)? = await iterator.next() else {
                Issue.record("not applied from the stream")
                return
            }
            #expect(summary.received == 1)
            #expect(running.http.statistics.syncs == syncsBefore)
            await reader.stopLive()
        }
    }

    /// A burst whose page is over the hub's `maxBytes` as JSON fits gzip'd: a `SyncClient`
    /// (which asks for `encoding=gzip`) applies it from the stream, on either channel, without
    /// a request.
    @Test(arguments: HTTPLiveChannelTests.Kind.allCases)
    func aBurstOverTheJSONLimitArrivesCompressed_andIsAppliedWithoutARequest(kind: HTTPLiveChannelTests.Kind) async throws {
        var options = RevisionServer.Options()
        options.live.maxBytes = 4_000
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema(), options: options)) { running in
            let (reader, writer) = (try Self.device(running.syncURL, replica: 1), try Self.device(running.syncURL, replica: 2))
            guard var iterator = try await Self.connectedOutcomes(of: reader, over: kind, running.syncURL) else { return }
            let names = (1...80).map { "List \($0) of a burst too large for one plain event" }
            try await writer.write { store in for name in names { _ = try store.insert("lists", values: [.text(name)]) } }
            _ = try await writer.sync()
            let syncsBefore = running.http.statistics.syncs
            #expect(try await LiveWait.eventually { try await Self.lists(reader) == names })
            guard case .applied(let summary, 1)? = await iterator.next() else {
                Issue.record("not applied from the stream")
                return
            }
            #expect(summary.received == names.count)
            #expect(running.http.statistics.syncs == syncsBefore)
            await reader.stopLive()
        }
    }

    @Test func aServerRestartMidStreamLosesNothing() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-live-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/server.sqlite"
        // The first server on a port below the system's ephemeral range (so that no outgoing
        // connection or port-0 server of another test takes it meanwhile); the second on the
        // same port.
        let first = try await StartedServer.startBelowEphemeralPorts(file: file)
        let url = URL(string: "http://127.0.0.1:\(first.port)/sync")!
        let reader = try Self.device(url, replica: 1)
        var options = LiveOptions()
        options.initialBackoff = .milliseconds(50)
        options.maxBackoff = .milliseconds(400)
        let outcomes = await reader.startLive(over: HTTPLiveChannel(syncURL: url), options: options)
        let connections = Mutex(0)
        let watcher = Task {
            for await outcome in outcomes { if case .connected = outcome { connections.withLock { $0 += 1 } } }
        }
        #expect(try await LiveWait.eventually { connections.withLock { $0 } == 1 })
        let writer = try Self.device(url, replica: 2)
        try await writer.write { _ = try $0.insert("lists", values: ["Before"]) }
        _ = try await writer.sync()
        #expect(try await LiveWait.eventually { try await Self.lists(reader) == ["Before"] })

        await first.stop()
        // Written while the reader's stream is down, through the restarted server.
        let second = try await StartedServer.start(file: file, port: first.port, attempts: 50)
        try await writer.write { _ = try $0.insert("lists", values: ["While away"]) }
        _ = try await writer.sync()
        #expect(try await LiveWait.eventually { try await Self.lists(reader) == ["Before", "While away"] })
        #expect(connections.withLock { $0 } >= 2)
        await reader.stopLive()
        await watcher.value
        await second.stop()
    }

    @Test func syncLiveKeepsAReplicaFileInStepUntilStopped() async throws {
        let folder = try SyncCommandTests.Folder()
        defer { folder.remove() }
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            var input = SyncCommandTests.input(running, folder, "live.sqlite")
            input.live = true
            let events = Mutex<[String]>([])
            let writer = try Self.device(running.syncURL, replica: 9)
            let replica = input.replica
            let outcome = await ReplicaSync.run(
                input, live: { event in events.withLock { $0.append("\(event)") } },
                stop: {
                    // Another device writes; the run stops once its replica file has the list.
                    _ = try? await LiveWait.eventually { events.withLock { $0.contains { $0.hasPrefix("connected") } } }
                    try? await writer.write { _ = try $0.insert("lists", values: ["Live"]) }
                    _ = try? await writer.sync()
                    _ = try? await LiveWait.eventually { (try? SyncCommandTests.contents(replica))?.contains { $0.contains("Live") } ?? false }
                })
            #expect(outcome.exit == .settled)
            #expect(outcome.summary.received == 1 && outcome.maxRevision == 1)
            #expect(try SyncCommandTests.contents(input.replica).contains { $0.contains("Live") })
        }
    }
}

/// A ``SyncHTTPServer`` on a SQLite file at a given port, stopped by cancelling its task.
struct StartedServer {
    let port: Int
    let task: Task<Void, any Error>

    /// On a free port in 20000..<30000 (tries several).
    static func startBelowEphemeralPorts(file: String) async throws -> StartedServer {
        var failure: (any Error)?
        for _ in 0..<20 {
            do { return try await start(file: file, port: Int.random(in: 20_000..<30_000)) } catch { failure = error }
        }
        throw failure ?? ServerDidNotStart()
    }

    /// On `port`, trying again every 100 ms up to `attempts` times while it is in use.
    static func start(file: String, port: Int, attempts: Int) async throws -> StartedServer {
        for _ in 1..<attempts {
            if let started = try? await start(file: file, port: port) { return started }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await start(file: file, port: port)
    }

    static func start(file: String, port: Int) async throws -> StartedServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = try RevisionServer(.file(path: file), schema: try httpTestSchema())
        let http = SyncHTTPServer(
            server: server, configuration: .init(port: port), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            onListening: { _, port in continuation.yield(port) })
        let task = Task {
            defer { continuation.finish() }
            do {
                try await http.run()
            } catch {
                await server.close()
                throw error
            }
            await server.close()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            _ = try await task.value
            throw ServerDidNotStart()
        }
        return StartedServer(port: bound, task: task)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
