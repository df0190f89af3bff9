import FieldMerge
@testable import FieldMergeSQLite
import Testing

@Suite struct StoreApplyTests {
    @Test func remap_rewritesRowsForeignKeysAndOutbox() throws {
        let store = try memoryStore()
        let list = try store.insert("lists", values: ["L"])
        let task = try store.insert("tasks", values: ["T", false, 0, .integer(list)])
        let note = try store.insert("notes", values: ["N", .integer(task)])
        // The server confirmed only the list so far.
        let listRecord = try #require(try store.record("lists", id: list)).withID(321)
        try store.apply(ServerChanges(remaps: [("lists", list, 321)], records: [AcknowledgedRecord(listRecord, revision: 1001)], maxRevision: 1001))
        #expect(try store.permanentID("lists", temporary: list) == 321)
        #expect(try store.record("lists", id: list) == nil)
        #expect(try store.record("tasks", id: task)?.values[3] == .integer(321))
        let pending = try store.pendingChanges()
        #expect(pending.map(\.id) == [task, note])
        #expect(pending.first?.record.values[3] == .integer(321))
        #expect(store.maxRevision == 1001)
    }

    @Test func acknowledgedMergeWithPendingFields_keepsThemQueued() throws {
        let store = try memoryStore()
        let server = Record(entity: "lists", id: 5, values: ["server"], stamps: [Stamp(clock: 10, replica: ReplicaID(2))])
        var merged = server
        merged.set(0, "mine", stamp: Stamp(clock: 20, replica: ReplicaID(1)))
        try store.apply(ServerChanges(records: [AcknowledgedRecord(record: merged, ancestor: server, revision: 7)]))
        #expect(try store.record("lists", id: 5)?.values == ["mine"])
        #expect(try store.ancestor("lists", id: 5)?.record.values == ["server"])
        #expect(try store.pendingFields("lists", id: 5) == FieldMask([0]))
        let pending = try store.pendingChanges()
        #expect(pending.map(\.kind) == [.update] && pending.first?.revision == 7)
        // The server confirms the upload: the row becomes its own ancestor, nothing pending.
        try store.apply(ServerChanges(records: [AcknowledgedRecord(merged, revision: 8)]))
        #expect(try store.pendingChanges().isEmpty)
        #expect(try store.ancestor("lists", id: 5)?.record.values == ["mine"])
    }

    @Test func serverDelete_removesTheRowAndAnyTrace() throws {
        let store = try memoryStore()
        let record = Record(entity: "lists", id: 5, values: ["x"], stamps: [Stamp(clock: 10, replica: ReplicaID(2))])
        try store.apply(ServerChanges(records: [AcknowledgedRecord(record, revision: 1)]))
        var gone = record
        gone.tombstone = Stamp(clock: 11, replica: ReplicaID(2))
        try store.apply(ServerChanges(records: [AcknowledgedRecord(gone, revision: 2)]))
        #expect(try store.record("lists", id: 5) == nil)
        #expect(try store.pendingChanges().isEmpty)
    }

    @Test func localDeleteSurvivingAMerge_isQueuedAgainstTheNewRevision() throws {
        let store = try memoryStore()
        let server = Record(entity: "lists", id: 5, values: ["x"], stamps: [Stamp(clock: 10, replica: ReplicaID(2))])
        var deleted = server
        deleted.tombstone = Stamp(clock: 30, replica: ReplicaID(1))
        try store.apply(ServerChanges(records: [AcknowledgedRecord(record: deleted, ancestor: server, revision: 4)]))
        let pending = try store.pendingChanges()
        #expect(pending.map(\.kind) == [.delete])
        #expect(pending.first?.revision == 4)
    }

    @Test func applyRejectsRecordsThatDoNotFitAndChangesNothing() throws {
        let store = try memoryStore()
        let good = Record(entity: "lists", id: 1, values: ["ok"], stamps: [Stamp(clock: 1, replica: ReplicaID(2))])
        let bad = Record(entity: "lists", id: 2, values: [.integer(3)], stamps: [Stamp(clock: 1, replica: ReplicaID(2))])
        #expect(throws: StoreError.self) {
            try store.apply(ServerChanges(records: [AcknowledgedRecord(good, revision: 1), AcknowledgedRecord(bad, revision: 1)], maxRevision: 1))
        }
        #expect(try store.record("lists", id: 1) == nil)
        #expect(store.maxRevision == 0)
    }
}
