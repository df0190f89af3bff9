import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// `GET /sync/events` and `GET /sync/poll` on the wire (Specs/live.md, Specs/http.md §2).
@Suite struct LiveEndpointTests {
    /// The request of a device of the tests' schema (pages, not pokes).
    static var eventsRequest: String {
        "GET /sync/events?schema=\(try! httpTestSchema().fingerprint) HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n\r\n"
    }

    /// Reads until `received` contains `text` (at most 20 s); whether it did.
    static func read(_ connection: RawConnection, until text: String) async -> Bool {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(20) {
            if String(decoding: connection.received, as: UTF8.self).contains(text) { return true }
            if connection.closed { return false }
            await connection.wait(for: .milliseconds(50))
        }
        return false
    }

    /// One list written through `POST /sync` by a client of its own.
    static func writeList(_ name: String, to running: RunningServer, replica: UInt64) async throws {
        let client = SyncClient(
            store: try Store(.memory, schema: try httpTestSchema(), replica: ReplicaID(replica)),
            transport: HTTPTransport(url: running.syncURL))
        try await client.write { _ = try $0.insert("lists", values: [.text(name)]) }
        _ = try await client.sync()
    }

    @Test func eventsStreamReadyThenEachCommitsChanges() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let connection = try await RawConnection.open(port: running.port, sending: Self.eventsRequest)
            #expect(await Self.read(connection, until: "event: ready\nid: 0\ndata: 0\n\n"))
            let head = String(decoding: connection.received, as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200"))
            #expect(head.lowercased().contains("content-type: text/event-stream"))
            try await Self.writeList("Pushed", to: running, replica: 1)
            #expect(await Self.read(connection, until: "event: changes\nid: 1\ndata: 0\ndata: {"))
            #expect(String(decoding: connection.received, as: UTF8.self).contains("Pushed"))
            #expect(running.http.statistics.liveSubscriptions == 1)
        }
    }

    @Test func keepAlivesComeWhileNothingChanges() async throws {
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.liveKeepAlive = .milliseconds(100)
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema()), configuration: configuration) { running in
            let connection = try await RawConnection.open(port: running.port, sending: Self.eventsRequest)
            #expect(await Self.read(connection, until: ": keep-alive\n\n"))
        }
    }

    @Test func aConnectionEndsWhenItsLifetimeDoes() async throws {
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.liveLifetime = .milliseconds(300)
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema()), configuration: configuration) { running in
            let connection = try await RawConnection.open(port: running.port, sending: Self.eventsRequest)
            #expect(await Self.read(connection, until: "event: ready"))
            // The chunked body ends (its last chunk), and the hub forgets the subscriber.
            #expect(await Self.read(connection, until: "\r\n0\r\n\r\n"))
            let server = try await running.http.withServer { $0 }
            #expect(try await LiveWait.eventually { server.live.subscribers == 0 })
        }
    }

    @Test func pollAnswersTheFirstEventPastItsRevisionOr204() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let quiet = try await RawHTTP.exchange(port: running.port, raw: Array("GET /sync/poll?since=0&wait=0.2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8))
            #expect(quiet.status == 204)
            try await Self.writeList("First", to: running, replica: 1)
            // Behind: answered at once with the server's revision.
            let behind = try await RawHTTP.exchange(port: running.port, raw: Array("GET /sync/poll?since=0&wait=20 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8))
            #expect(behind.status == 200)
            #expect(String(decoding: behind.body, as: UTF8.self) == "event: ready\nid: 1\ndata: 1\n\n")
            // Waiting at revision 1: the next commit's page comes.
            let fingerprint = try httpTestSchema().fingerprint
            async let waiting = RawHTTP.exchange(port: running.port, raw: Array("GET /sync/poll?since=1&wait=20&schema=\(fingerprint) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8))
            let server = try await running.http.withServer { $0 }
            #expect(try await LiveWait.eventually { server.live.subscribers == 1 })
            try await Self.writeList("Second", to: running, replica: 2)
            let page = try await waiting
            #expect(page.status == 200)
            let text = String(decoding: page.body, as: UTF8.self)
            #expect(text.hasPrefix("event: changes\nid: 2\ndata: 1\ndata: {") && text.contains("Second"))
            // Each answered poll, 204 or an event, left the hub: no subscriber stays behind.
            #expect(try await LiveWait.eventually { server.live.subscribers == 0 })
        }
    }

    /// A device that says `encoding=gzip` gets a large page gzip'd in base64 (`changes-gzip`),
    /// one that fits only that way included, and a small page as it is; a device that does
    /// not say so gets the large one as a poke, as before (Specs/live.md §1, §3).
    @Test func aDeviceThatReadsGzipGetsLargePagesCompressed() async throws {
        var options = RevisionServer.Options()
        options.live.maxBytes = 4_000
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema(), options: options)) { running in
            let plain = try await RawConnection.open(port: running.port, sending: Self.eventsRequest)
            let gzip = try await RawConnection.open(
                port: running.port, sending: Self.eventsRequest.replacingOccurrences(of: " HTTP/1.1", with: "&encoding=gzip HTTP/1.1"))
            #expect(await Self.read(plain, until: "event: ready\nid: 0\n"))
            #expect(await Self.read(gzip, until: "event: ready\nid: 0\n"))
            let names = (1...60).map { "A list with a name long enough to matter, number \($0)" }
            let client = SyncClient(
                store: try Store(.memory, schema: try httpTestSchema(), replica: ReplicaID(1)), transport: HTTPTransport(url: running.syncURL))
            try await client.write { store in for name in names { _ = try store.insert("lists", values: [.text(name)]) } }
            _ = try await client.sync()
            #expect(await Self.read(gzip, until: "event: changes-gzip\nid: 1\ndata: 0\ndata: "))
            #expect(await Self.read(plain, until: "event: poke\nid: 1\ndata: 1\n\n"))
            // Read back, the compressed event is the page: every list, as JSON over the limit.
            var parser = ServerSentEventParser()
            let body = connectionBody(gzip.received)
            let messages = try parser.feed(body).filter { $0.type == "changes-gzip" }
            let event = try LiveEvent(type: messages[0].type, id: messages[0].id, data: messages[0].data)
            guard case .changes(0, 1, let json) = event else { Issue.record("read back as \(event)"); return }
            #expect(json.count > 4_000)
            let text = String(decoding: json, as: UTF8.self)
            #expect(names.allSatisfy { text.contains($0) })
            #expect(messages[0].data.count <= 4_000)
            // A small page goes as it is.
            try await Self.writeList("Small", to: running, replica: 2)
            #expect(await Self.read(gzip, until: "event: changes\nid: 2\ndata: 1\ndata: {"))
        }
    }

    /// The bytes of a chunked HTTP response after its head, chunk framing removed.
    private func connectionBody(_ received: [UInt8]) -> [UInt8] {
        let text = received
        guard let end = text.indices.first(where: { text[$0...].starts(with: [13, 10, 13, 10]) }) else { return [] }
        var body: [UInt8] = []
        var index = end + 4
        while index < text.count {
            guard let lineEnd = text[index...].indices.first(where: { text[$0...].starts(with: [13, 10]) }),
                let size = Int(String(decoding: text[index..<lineEnd], as: UTF8.self), radix: 16), size > 0,
                lineEnd + 2 + size <= text.count
            else { break }
            body += text[(lineEnd + 2)..<(lineEnd + 2 + size)]
            index = lineEnd + 2 + size + 2
        }
        return body
    }

    @Test func aDeviceNamingNoSchemaIsPoked() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let connection = try await RawConnection.open(port: running.port, sending: "GET /sync/events HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(await Self.read(connection, until: "event: ready\nid: 0\ndata: 0\n\n"))
            try await Self.writeList("Unseen", to: running, replica: 1)
            #expect(await Self.read(connection, until: "event: poke\nid: 1\ndata: 1\n\n"))
            #expect(!String(decoding: connection.received, as: UTF8.self).contains("Unseen"))
        }
    }

    @Test func pollRefusesABadRevisionAndOtherMethods() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let bad = try await RawHTTP.exchange(port: running.port, raw: Array("GET /sync/poll?since=-3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8))
            #expect(bad.status == 400)
            #expect(String(decoding: bad.body, as: UTF8.self).contains("\"badRequest\""))
            let post = try await RawHTTP.exchange(port: running.port, raw: Array("POST /sync/events HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            #expect(post.status == 405)
            #expect(post.headers["allow"] == "GET")
        }
    }

    @Test(arguments: ["nonsense", "project=*", "project=3,2", "=4"])
    func liveRequestsRefuseSubscriptionsTheyCannotRead(_ text: String) async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let query = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
            for path in ["/sync/poll?since=0&wait=0&subscriptions=\(query)", "/sync/events?subscriptions=\(query)"] {
                let bad = try await RawHTTP.exchange(port: running.port, raw: Array("GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8))
                #expect(bad.status == 400, "\(path)")
                #expect(String(decoding: bad.body, as: UTF8.self).contains("subscriptions"), "\(path)")
            }
            // A list it can read is taken (a server without scopes then ignores it).
            let fine = try await RawHTTP.exchange(
                port: running.port, raw: Array("GET /sync/poll?since=0&wait=0&subscriptions=project%3D2%2C3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8))
            #expect(fine.status == 204)
        }
    }

    @Test func aClientThatStopsReadingIsDropped() async throws {
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.writeTimeout = .milliseconds(500)
        let ended = Mutex<String?>(nil)
        try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(
                server: try! RevisionServer(.memory, schema: try! httpTestSchema()), configuration: configuration, logger: logger,
                middleware: { router in
                    // A response without end, as a live stream to a client that never reads.
                    router.get("/endless") { _, _ in
                        Response(status: .ok, body: ResponseBody { writer in
                            let chunk = ByteBuffer(repeating: 0x61, count: 65_536)
                            do {
                                while true { try await writer.write(chunk) }
                            } catch {
                                ended.withLock { $0 = "\(error)" }
                                throw error
                            }
                        })
                    }
                }, onListening: onListening)
        }) { running in
            let connection = try await RawConnection.open(port: running.port, sending: "GET /endless HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await LiveWait.eventually { ended.withLock { $0 != nil } })
            // Closed by the write timeout, not by anything else.
            #expect(running.logs.entries.contains { "\($0.message)".contains("within the write timeout") })
            connection.close()
        }
    }

    @Test(.timeLimit(.minutes(5))) func aGracefulShutdownEndsLiveStreams() async throws {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var configuration = SyncHTTPServer.Configuration(port: 0)
        // A lifetime no test run reaches: only the shutdown can end this stream.
        configuration.liveLifetime = .seconds(3_600)
        let http = SyncHTTPServer(
            server: try RevisionServer(.memory, schema: try httpTestSchema()), configuration: configuration,
            onListening: { _, port in continuation.yield(port) })
        let group = ServiceGroup(services: [http], gracefulShutdownSignals: [], logger: Logger(label: "test"))
        var triggered = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let connection = try await RawConnection.open(port: port, sending: Self.eventsRequest)
            #expect(await Self.read(connection, until: "event: ready"))
            triggered = ContinuousClock.now
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            await connection.waitForClose(limit: .seconds(10))
            #expect(connection.closed)
        }
        // The service group returned, so the stream ended; well before its hour-long lifetime
        // (a loose bound: a loaded machine may take seconds to wind down).
        #expect(ContinuousClock.now - triggered < .seconds(240))
    }
}

enum LiveWait {
    /// Polls `condition` every 10 ms for up to 20 s.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<2_000 {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

/// Live streams of a multi-tenant endpoint: each tenant's devices hear only their tenant, and
/// a stream holds its tenant open (in use) until it ends.
@Suite struct LiveTenantTests {
    @Test func aStreamHearsItsTenantAndHoldsItInUse() async throws {
        let schema = try httpTestSchema()
        let tenants = TenantDirectory { _ in try RevisionServer(.memory, schema: schema) }
        // A stream notices its client went at its next write: keep-alives come often here.
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.liveKeepAlive = .milliseconds(100)
        try await withHTTPServer(making: { [configuration] logger, onListening in
            SyncHTTPServer(
                tenants: tenants, schema: schema, configuration: configuration, logger: logger,
                middleware: { $0.add(middleware: TestIdentityMiddleware()) }, onListening: onListening)
        }) { running in
            // Acme exists (a write created it); then ann of acme subscribes, eve of globex too.
            #expect(try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "ann@acme"], body: TenantTests.createHome).status == 200)
            let request = { (who: String) in
                "GET /sync/events?schema=\(schema.fingerprint) HTTP/1.1\r\nHost: t\r\nX-Test-Identity: \(who)\r\n\r\n"
            }
            let ann = try await RawConnection.open(port: running.port, sending: request("ann@acme"))
            let eve = try await RawConnection.open(port: running.port, sending: request("eve@globex"))
            #expect(await LiveEndpointTests.read(ann, until: "event: ready\nid: 1\n"))
            #expect(await LiveEndpointTests.read(eve, until: "event: ready\nid: 0\n"))
            #expect(tenants.statistics.inUse >= 1)
            let second = Array(#"{"maxRevision":1,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"update":[],"delete":[],"attributes":{"-1":{"name":"Work"}}}}]}"#.utf8)
            #expect(try await RawHTTP.exchange(port: running.port, headers: ["X-Test-Identity": "bob@acme"], body: second).status == 200)
            #expect(await LiveEndpointTests.read(ann, until: "event: changes\nid: 2\n"))
            #expect(String(decoding: ann.received, as: UTF8.self).contains("Work"))
            #expect(!String(decoding: eve.received, as: UTF8.self).contains("Work"))
            // Gone: the leases are released.
            ann.close()
            eve.close()
            #expect(try await LiveWait.eventually { tenants.statistics.inUse == 0 })
        }
    }
}
