import FieldMergeServer
import FieldMergeProtocol
import Synchronization

/// Owns a ``RevisionServer`` and lets one request at a time reach it.
///
/// `RevisionServer` is not thread-safe and each request is one SQLite transaction, so the
/// actor is the only way in: decoding and encoding happen outside it, on whatever task
/// serves the connection, and only ``RevisionServer/handle(_:)`` runs inside. The server's
/// revision and the request counters sit behind a lock, so that `GET /health` never waits
/// behind a long sync.
actor RevisionServerHost {
    private let server: RevisionServer
    private let published: Mutex<Int64>
    private let counters = Mutex(SyncHTTPServer.Statistics())

    /// What one request did to the server.
    struct Outcome: Sendable {
        var response: SyncResponse
        var revisionBefore: Int64
        var revisionAfter: Int64
    }

    init(server: sending RevisionServer) {
        published = Mutex(server.maxRevision)
        self.server = server
    }

    /// Answers one decoded request (one SQLite transaction).
    ///
    /// - Throws: ``SyncServerError``; the server has then changed nothing.
    func handle(_ request: SyncRequest) throws(SyncServerError) -> Outcome {
        let before = server.maxRevision
        defer { published.withLock { $0 = server.maxRevision } }
        let response = try server.handle(request)
        return Outcome(response: response, revisionBefore: before, revisionAfter: server.maxRevision)
    }

    /// Runs `body` with the server, between requests.
    func withServer<T: Sendable>(_ body: (RevisionServer) throws -> T) rethrows -> T {
        defer { published.withLock { $0 = server.maxRevision } }
        return try body(server)
    }

    /// The server's revision after the last request, readable without waiting for the actor.
    nonisolated var maxRevision: Int64 { published.withLock { $0 } }

    /// The counters so far.
    nonisolated var statistics: SyncHTTPServer.Statistics { counters.withLock { $0 } }

    /// Updates the counters.
    nonisolated func count(_ update: (inout SyncHTTPServer.Statistics) -> Void) {
        counters.withLock { update(&$0) }
    }
}
