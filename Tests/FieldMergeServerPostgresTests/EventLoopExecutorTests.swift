import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import Synchronization
import Testing

/// A server on PostgreSQL runs on the event loop of its connector's connections, and so does
/// the work of its transactions: an answer from PostgreSQL resumes it where it arrived,
/// without waking other threads (Specs/http.md §8).
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct EventLoopExecutorTests {
    /// Hears the server's phases and whether each ran on the connector's loop.
    final class OnTheLoop: SyncProbe {
        let executor: PostgresEventLoopExecutor
        let heard = Mutex<[(SyncPhase, Bool)]>([])
        init(_ executor: PostgresEventLoopExecutor) { self.executor = executor }
        func record(_ phase: SyncPhase, _ duration: Duration) {
            let onIt = executor.isCurrent
            heard.withLock { $0.append((phase, onIt)) }
        }
    }

    @Test func theServerAndItsTransactions_runOnTheConnectorsEventLoop() async throws {
        try await PostgresTestDatabase.with { database in
            let connector = database.connector()
            let probe = OnTheLoop(connector.executor)
            var options = RevisionServer.Options()
            options.probe = probe
            let server = try await RevisionServer(storage: try PostgresServerStorage(connector), schema: try postgresSchema(), options: options)
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("Home")]))
            let heard = probe.heard.withLock { $0 }
            #expect(Set(heard.map(\.0)).isSuperset(of: [.catchUp, .serverApply, .replyStorage]))
            let off = heard.filter { !$0.1 }.map(\.0)
            #expect(off.isEmpty, "phases off the loop: \(off)")
            #expect(server.isOnItsExecutor == connector.executor.isCurrent)
            #expect(!connector.executor.isCurrent, "the test's own task is not on it")
            // A transaction's calls that no actor isolates (PostgresNIO's) prefer the loop too.
            let storage = try #require(server.unsafeStorage as? PostgresServerStorage)
            #expect(try await storage.read { connector.executor.isCurrent })
            #expect(try await storage.read { try await storage.state().maxRevision } == 1)
        }
    }
}
