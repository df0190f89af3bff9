import FieldMerge
import FieldMergeSQLite
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import InMemoryLogging
import Logging

/// The schema of these tests: lists and their tasks.
func httpTestSchema() throws -> Schema { try syncSchema() }

/// A ``SyncHTTPServer`` listening on 127.0.0.1 at a port the system picked.
struct RunningServer: Sendable {
    let http: SyncHTTPServer
    let port: Int
    let logs: InMemoryLogHandler

    var syncURL: URL { URL(string: "http://127.0.0.1:\(port)/sync")! }
    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Every table of the server as text lines, and its revision: what must not change
    /// when a request is refused.
    func state() async throws -> [String] {
        try await http.withServer { server in
            var lines = ["maxRevision=\(await server.maxRevision)"]
            for entity in server.schema.entities {
                for row in try server.database.rows("SELECT * FROM \(Database.quote(entity.name)) ORDER BY id") {
                    lines.append(entity.name + ":" + row.map { "\($0)" }.joined(separator: "|"))
                }
            }
            for table in ["__fm_log", "__fm_deleted", "__fm_ids", "__fm_replies"] {
                lines.append("\(table)=\(try server.database.rows("SELECT * FROM \(table)").count)")
            }
            return lines
        }
    }
}

struct ServerDidNotStart: Error {}

/// Runs `body` against a live server on an ephemeral port, then shuts the server down.
func withHTTPServer<T>(
    _ server: sending RevisionServer, configuration: SyncHTTPServer.Configuration = .init(port: 0),
    _ body: (RunningServer) async throws -> T
) async throws -> T {
    var configuration = configuration
    configuration.port = 0
    // A test that does not time its connections gets a read timeout a busy machine cannot
    // reach: under a whole suite on 2 cores, a step between two reads took seconds.
    if configuration.readTimeout == SyncHTTPServer.Configuration(port: 0).readTimeout { configuration.readTimeout = .seconds(60) }
    return try await withHTTPServer(making: { [configuration] logger, onListening in
        SyncHTTPServer(server: server, configuration: configuration, logger: logger, onListening: onListening)
    }, body)
}

/// Runs `body` against the live server `make` builds (with the test's logger and listening
/// callback, on an ephemeral port), then shuts it down.
func withHTTPServer<T>(
    making make: (Logger, @escaping @Sendable (String, Int) async -> Void) -> SyncHTTPServer,
    _ body: (RunningServer) async throws -> T
) async throws -> T {
    let logs = InMemoryLogHandler()
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let http = make(Logger(label: "test", factory: { _ in logs }), { _, port in continuation.yield(port) })
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            defer { continuation.finish() }
            try await http.run()
        }
        defer { group.cancelAll() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await group.waitForAll()
            throw ServerDidNotStart()
        }
        return try await body(RunningServer(http: http, port: port, logs: logs))
    }
}
