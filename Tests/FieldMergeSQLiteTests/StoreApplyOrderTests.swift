import FieldMerge
@_spi(Benchmarks) @testable import FieldMergeSQLite
import Testing

/// `Store.apply` writes in key order and takes no savepoint inside a caller's transaction:
/// neither may change what it does.
@Suite struct StoreApplyOrderTests {
    private func list(_ id: Int64, _ title: String, clock: UInt64 = 10) -> Record {
        Record(entity: "lists", id: id, values: [.text(title)], stamps: [Stamp(clock: clock, replica: ReplicaID(2))])
    }

    @Test func keyOrder_sortsByEntityAndIdAndKeepsRepeatsInTheirOrder() {
        let task = Record(entity: "tasks", id: 1, values: ["T", false, 0, .null], stamps: ContiguousArray(repeating: Stamp(clock: 1, replica: ReplicaID(2)), count: 4))
        let records = [list(9, "a"), task, list(3, "b"), list(7, "c"), list(3, "d")]
            .map { AcknowledgedRecord($0, revision: 1) }
        #expect(Store.keyOrder(records) == [2, 4, 3, 0, 1])
    }

    @Test func scatteredPage_writesEveryRowAndReportsTheGivenOrder() throws {
        let store = try memoryStore()
        var reported: [StoreChange] = []
        store.onChange = { reported.append($0) }
        let ids: [Int64] = [907, 12, 455, 3, 600, 1_000, 88]
        let records = ids.map { AcknowledgedRecord(list($0, "list \($0)"), revision: 4) }
        // A record named twice: the later state is the one kept.
        try store.apply(ServerChanges(records: records + [AcknowledgedRecord(list(12, "again", clock: 11), revision: 5)], maxRevision: 5))
        for id in ids where id != 12 { #expect(try store.record("lists", id: id)?.values == [.text("list \(id)")]) }
        #expect(try store.record("lists", id: 12)?.values == ["again"])
        #expect(try store.ancestor("lists", id: 12)?.revision == 5)
        #expect(reported.count == 1)
        #expect(reported.first?.updated["lists"] == ids + [12])
    }

    @Test func failingInsideACallersTransaction_leavesNothingBehind() throws {
        let store = try memoryStore()
        try store.apply(ServerChanges(records: [AcknowledgedRecord(list(1, "kept"), revision: 1)], maxRevision: 1))
        struct Abort: Error {}
        #expect(throws: (any Error).self) {
            try store.transaction(origin: .sync) {
                try store.apply(ServerChanges(
                    records: (1...600).map { AcknowledgedRecord(list(Int64($0), "new \($0)", clock: 20), revision: 2) }, maxRevision: 2))
                throw Abort()
            }
        }
        #expect(store.maxRevision == 1)
        #expect(try store.record("lists", id: 1)?.values == ["kept"])
        #expect(try store.record("lists", id: 2) == nil)
        #expect(try store.ancestor("lists", id: 1)?.revision == 1)
        // The capture triggers the bulk write dropped are back: a plain-SQL edit is taken in.
        #expect(try store.database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == .integer(Int64(4 * store.schema.entities.count)))
        try store.database.execute("UPDATE lists SET name = 'Edited with SQL' WHERE id = 1")
        try store.captureExternalWrites()
        #expect(try store.pendingChanges().map(\.id) == [1])
    }

    @Test func serverVersions_areTheirOwnAncestorsWithNothingPending() throws {
        let store = try memoryStore()
        try store.applyServerVersions([list(4, "four"), list(2, "two")], revision: 9)
        #expect(store.maxRevision == 9)
        #expect(try store.record("lists", id: 2)?.values == ["two"])
        #expect(try store.ancestor("lists", id: 4)?.revision == 9)
        #expect(try store.pendingChanges().isEmpty)
    }
}
