import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeSyncHTTP
import FieldMergeSQLite
import Foundation
import Hummingbird
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Holds every request for a while after telling the test it arrived: a request in flight
/// when the signal comes.
struct HoldRequestsMiddleware: RouterMiddleware {
    typealias Context = BasicSyncRequestContext
    let arrived: AsyncStream<Void>.Continuation
    let hold: Duration
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        arrived.yield()
        try await Task.sleep(for: hold)
        return try await next(request, context)
    }
}

/// `runUntilShutdownSignal()` in this process, stopped by a real SIGTERM. These are the only
/// tests that send this process a signal: they run one after the other (serialized, and
/// no other test traps SIGTERM), and send it only once the server listens, when the
/// service group already has its handler.
@Suite(.serialized) struct ShutdownSignalTests {
    /// The FieldMergeServerHTTP catalog's snippet (between `// FieldMergeServerHTTP.md block
    /// begin` and `… end`, checked by ``DocSnippets``), served until SIGTERM.
    @Test func docSnippet_servesUntilSIGTERM() async throws {
        let schema = try httpTestSchema()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-embed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let databasePath = folder.appendingPathComponent("server.sqlite").path
        let port = try Self.freePort()

        let stopped = Mutex(false)
        let serving = Task {
            defer { stopped.withLock { $0 = true } }
            // FieldMergeServerHTTP.md block begin
            let server = try RevisionServer(.file(path: databasePath), schema: schema)   // the devices' schema, strategies included
            let http = SyncHTTPServer(server: server, configuration: .init(host: "0.0.0.0", port: port))
            try await http.runUntilShutdownSignal()   // returns after SIGTERM or SIGINT, once requests in flight are answered
            // FieldMergeServerHTTP.md block end
        }
        defer { serving.cancel() }                 // a failed check below must not leave it serving
        try await Self.waitUntilHealthy(port: port, unless: { stopped.withLock { $0 } })
        let client = SyncClient(store: try Store(.memory, schema: schema), transport: HTTPTransport(url: URL(string: "http://127.0.0.1:\(port)/sync")!))
        try await client.write { _ = try $0.insert("lists", values: ["Home"]) }
        #expect(try await client.sync().sent == 1)

        #expect(kill(getpid(), SIGTERM) == 0)
        try await serving.value
        // What it answered is in its file.
        let reopened = try RevisionServer(.file(path: databasePath), schema: schema)
        #expect(try reopened.database.rows("SELECT name FROM lists") == [[.text("Home")]])
    }

    @Test func sigterm_letsTheRequestInFlightFinish_thenRunReturns() async throws {
        let schema = try httpTestSchema()
        let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let http = SyncHTTPServer(
            server: try RevisionServer(.memory, schema: schema), configuration: .init(port: 0),
            middleware: { $0.add(middleware: HoldRequestsMiddleware(arrived: arrived, hold: .milliseconds(700))) },
            onListening: { _, port in listening.yield(port) })
        let serving = Task { try await http.runUntilShutdownSignal() }

        var portIterator = ports.makeAsyncIterator()
        let port = try #require(await portIterator.next())
        let url = URL(string: "http://127.0.0.1:\(port)/sync")!
        let client = SyncClient(store: try Store(.memory, schema: schema), transport: HTTPTransport(url: url))
        try await client.write { _ = try $0.insert("lists", values: ["Home"]) }
        let syncing = Task { try await client.sync() }

        var arrivalIterator = arrivals.makeAsyncIterator()
        _ = await arrivalIterator.next()           // the sync is now held inside the server
        #expect(kill(getpid(), SIGTERM) == 0)

        let summary = try await syncing.value      // answered in full after the signal
        #expect(summary.sent == 1)
        #expect(try await client.write { try $0.database.rows("SELECT id FROM lists") } == [[.integer(1)]])
        try await serving.value                    // returns, without an error
        #expect(await http.withServer { await $0.maxRevision } == 1)

        // Nobody listens any more.
        let late = SyncClient(store: try Store(.memory, schema: schema), transport: HTTPTransport(url: url))
        await #expect(throws: SyncError.self) { try await late.sync() }
    }

    /// A TCP port nobody listens on now (the system's pick for port 0).
    /// A port free now, below the kernel's range for ports it picks itself (32768 and up
    /// here): the servers of the other tests, which listen on port 0, cannot be given it in
    /// the moment before this test's server binds it (one was, and this test talked to it).
    static func freePort() throws -> Int {
        for _ in 0..<200 {
            let port = UInt16.random(in: 20_000..<32_000)
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { throw RawHTTP.Failure(description: "socket: \(errno)") }
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = INADDR_ANY
            let length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 }
            }
            if bound { return Int(port) }
        }
        throw RawHTTP.Failure(description: "no free port in 20000..<32000")
    }

    /// Waits until `GET /health` on `port` answers 200; fails at once when `stopped` says the
    /// server gave up (an address it could not bind), else after 10 minutes: a whole test run
    /// on two loaded cores can hold every test up for well over a minute.
    static func waitUntilHealthy(port: Int, unless stopped: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(600)
        while ContinuousClock.now < deadline {
            if stopped() { throw RawHTTP.Failure(description: "the server stopped before answering on port \(port)") }
            if let response = try? await RawHTTP.exchange(port: port, method: "GET", path: "/health"), response.status == 200 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw RawHTTP.Failure(description: "nothing answered GET /health on port \(port) within 10 minutes")
    }
}
