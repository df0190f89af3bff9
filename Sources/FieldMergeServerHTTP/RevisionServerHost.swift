import FieldMergeProtocol
import FieldMergeServer
import Synchronization

/// Hands requests to a ``RevisionServer`` and keeps what `GET /health` and the statistics
/// read, so that they never wait behind a long sync.
///
/// Decoding and encoding happen outside the server, on whatever task serves the connection;
/// the server (an actor on an executor of its own) answers one request at a time.
final class RevisionServerHost: Sendable {
    let server: RevisionServer
    private let published: Mutex<Int64>
    private let counters = Mutex(SyncHTTPServer.Statistics())

    /// What one request did to the server.
    struct Outcome: Sendable {
        var response: SyncResponse
        var revisionBefore: Int64
        var revisionAfter: Int64
    }

    init(server: RevisionServer) {
        published = Mutex(0)
        self.server = server
    }

    /// Reads the server's revision into what `GET /health` shows.
    func refresh() async {
        let revision = await server.maxRevision
        published.withLock { $0 = revision }
    }

    /// Answers one decoded request (one storage transaction).
    ///
    /// - Throws: ``ServerError``; the server has then changed nothing.
    func handle(_ request: SyncRequest, identity: SyncIdentity?) async throws(ServerError) -> Outcome {
        let (response, before, after) = try await server.handleReporting(request, identity: identity)
        published.withLock { $0 = max($0, after) }
        return Outcome(response: response, revisionBefore: before, revisionAfter: after)
    }

    /// Runs `body` with the server.
    func withServer<T>(_ body: (RevisionServer) async throws -> T) async rethrows -> T {
        let result = try await body(server)
        await refresh()
        return result
    }

    /// The server's revision after the last request, readable without waiting for the server.
    var maxRevision: Int64 { published.withLock { $0 } }

    /// The counters so far.
    var statistics: SyncHTTPServer.Statistics { counters.withLock { $0 } }

    /// Updates the counters.
    func count(_ update: (inout SyncHTTPServer.Statistics) -> Void) {
        counters.withLock { update(&$0) }
    }
}
