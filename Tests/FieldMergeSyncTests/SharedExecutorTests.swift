import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Testing

/// Clients given one executor (`SyncClient(executor:)`) run on it, one after another, and
/// sync as clients with a queue each do.
@Suite struct SharedExecutorTests {
    @Test func clientsOnOneExecutorRunOnItAndConverge() async throws {
        let schema = try syncSchema()
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let shared = DatabaseExecutor(label: "test.shared")
        let clients = try (1...3).map { replica in
            SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(UInt64(replica))), transport: transport, executor: shared)
        }
        let own = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(9)), transport: transport)
        for client in clients { #expect(await client.withStore { _ in shared.isCurrent }) }
        #expect(await own.withStore { _ in !shared.isCurrent })
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, client) in clients.enumerated() {
                group.addTask {
                    try await client.write { _ = try $0.insert("lists", values: [.text("list \(index)")]) }
                    _ = try await client.sync()
                }
            }
            try await group.waitForAll()
        }
        for client in clients + [own] { _ = try await client.sync() }
        for client in clients + [own] {
            let lists = try await LiveSyncTests.lists(client)
            #expect(Set(lists) == ["list 0", "list 1", "list 2"] && lists.count == 3)
        }
    }
}
