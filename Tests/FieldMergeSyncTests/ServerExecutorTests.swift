import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Synchronization
import FieldMergeTestSupport
import Testing

/// The storage's calls run on the server actor's own executor (its `ServerStorage`
/// requirements are `nonisolated(nonsending)`), never on Swift concurrency's shared pool,
/// where a blocking SQLite call would starve every other task.
@Suite struct ServerExecutorTests {
    /// Hears the phases timed inside storage calls (the log write, the commit), and whether
    /// each ran on the server's executor.
    final class Where: SyncProbe {
        let server = Mutex<RevisionServer?>(nil)
        let heard = Mutex<[(SyncPhase, Bool)]>([])
        func record(_ phase: SyncPhase, _ duration: Duration) {
            guard phase == .log || phase == .serverCommit else { return }
            let onIt = server.withLock { $0?.isOnItsExecutor } ?? false
            heard.withLock { $0.append((phase, onIt)) }
        }
    }

    @Test func storageCalls_runOnTheServersOwnExecutor() async throws {
        let schema = try syncSchema()
        let probe = Where()
        var options = RevisionServer.Options()
        options.probe = probe
        let server = try RevisionServer(.memory, schema: schema, options: options)
        probe.server.withLock { $0 = server }
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: InProcessTransport(server: server))
        _ = try await client.withStore { store in try store.insert("lists", values: [.text("Home")]) }
        _ = try await client.sync()

        let heard = probe.heard.withLock { $0 }
        #expect(Set(heard.map(\.0)) == [.log, .serverCommit], "the storage's log write and commit were timed")
        let off = heard.filter { !$0.1 }.map(\.0)
        #expect(off.isEmpty, "storage calls off the server's executor: \(off)")
        #expect(!server.isOnItsExecutor, "the test's own task is not on it")
    }
}
