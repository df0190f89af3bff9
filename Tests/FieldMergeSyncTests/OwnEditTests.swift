import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// A server value that carries this replica's own, older stamp is its own earlier edit.
@Suite struct OwnEditTests {
    @Test func aCounterEditedAgainAfterALostAnswer_countsEachIncrementOnce() async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let lossy = LosingTransport(server, lose: 0)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: lossy)
        _ = try await client.withStore { store in
            let list = try store.insert("lists", values: ["Home"])
            return try store.insert("tasks", values: ["Tally", false, 0, .integer(list)])
        }
        _ = try await client.sync()
        await lossy.setLose(1)
        _ = try await client.withStore { try $0.update("tasks", id: 1, ["count": 2]) }
        let failure = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(failure?.code == .unreachable && failure?.isRetryable == true && failure?.cause is TransportError)
        _ = try await client.withStore { try $0.update("tasks", id: 1, ["count": 5]) }
        _ = try await client.sync()
        let count = try await server.withServer { try $0.database.scalar("SELECT count FROM tasks WHERE id = 1") }
        #expect(count == .integer(5))
        #expect(try await client.withStore { try $0.database.scalar("SELECT count FROM tasks WHERE id = 1") } == .integer(5))
    }

    @Test func anotherReplicasEditStillCounts() async throws {
        let entity = Entity("tasks", fields: [Field("count", .integer, strategy: .counter)])
        let me = ReplicaID(1), other = ReplicaID(2)
        let ancestor = Record(entity, id: 1, values: [0], stamp: Stamp(milliseconds: 100, replica: me))
        var local = ancestor, remote = ancestor
        local.set(0, 5, stamp: Stamp(milliseconds: 300, replica: me))
        remote.set(0, 2, stamp: Stamp(milliseconds: 200, replica: other))
        let context = MergeContext(resolutionStamp: Stamp(milliseconds: 400, replica: me))
        #expect(try ThreeWayMerge.merge(entity, ancestor: ancestor, local: local, remote: remote, context: context).merged.values[0] == 7)
        // The same remote value under this replica's stamp is its own earlier edit.
        remote.set(0, 2, stamp: Stamp(milliseconds: 200, replica: me))
        let own = try ThreeWayMerge.merge(entity, ancestor: ancestor, local: local, remote: remote, context: context)
        #expect(own.merged.values[0] == 5)
        #expect(own.conflicts.isEmpty)
        // Without a merging replica (no resolution stamp) the rule is off.
        #expect(try ThreeWayMerge.merge(entity, ancestor: ancestor, local: local, remote: remote).merged.values[0] == 7)
    }
}

extension LosingTransport {
    func setLose(_ count: Int) { lose = count }
}
