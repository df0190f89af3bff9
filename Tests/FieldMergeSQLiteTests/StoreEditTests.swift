import FieldMerge
@testable import FieldMergeSQLite
import Testing

@Suite struct StoreEditTests {
    @Test func insert_givesTemporaryIdsAndQueuesCreates() throws {
        let store = try memoryStore()
        let list = try store.insert("lists", values: ["Groceries"])
        let task = try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
        #expect(list == -1 && task == -2)
        let pending = try store.pendingChanges()
        #expect(pending.map(\.kind) == [.create, .create])
        #expect(pending.map(\.id) == [-1, -2])
        #expect(pending[1].record.values[3] == .integer(-1))
        #expect(pending[1].fields == FieldMask.all(count: 4))
    }

    @Test func appTablesAreQueryableWithPlainSQL() throws {
        let store = try memoryStore()
        let list = try store.insert("lists", values: ["Groceries"])
        try store.insert("tasks", values: ["Milk", true, 3, .integer(list)])
        let rows = try store.database.rows(
            "SELECT t.title, t.done, l.name FROM tasks t JOIN lists l ON l.id = t.listID")
        #expect(rows == [[.text("Milk"), .integer(1), .text("Groceries")]])
    }

    @Test func everyFieldTypeRoundTrips() throws {
        let store = try memoryStore()
        let cases: [ContiguousArray<Value>] = [
            [.null, .null, .null, .null, .null, .null, .null],
            [.integer(.min), .real(-1e-300), "", false, .date(.min), .blob([]), .textSet([])],
            [.integer(.max), .real(.greatestFiniteMagnitude), "Grüße 👋🏽 \u{0} nul", true, .date(.max),
             .blob(Array(0...255)), .textSet(["a\"b", "back\\slash", "new\nline", "😀", "\u{1}"])],
            [0, .real(1e-300), .text(String(repeating: "x", count: 200_000)), true, .date(0), .blob([0]), .textSet(["only"])],
        ]
        for values in cases {
            let id = try store.insert("things", values: values)
            let record = try #require(try store.record("things", id: id))
            #expect(record.values == values)
        }
    }

    @Test func realsThatSQLiteCannotKeep_areRefusedOrCanonical() throws {
        let store = try memoryStore()
        let id = try store.insert("things", values: [nil, .real(-0.0), nil, nil, nil, nil, nil])
        #expect(try store.record("things", id: id)?.values[1] == .real(0.0))
        #expect(try store.update("things", id: id, set: [(field: 1, value: .real(-0.0))]).isEmpty)
        let error = #expect(throws: StoreError.self) { try store.update("things", id: id, set: [(field: 1, value: .real(.nan))]) }
        #expect(error?.code == .invalidRecord)
        #expect(try store.record("things", id: id)?.values[1] == .real(0.0))
    }

    @Test func update_stampsOnlyFieldsThatReallyChange() throws {
        let store = try memoryStore()
        let id = try store.insert("lists", values: ["A"])
        let before = try #require(try store.record("lists", id: id))
        #expect(try store.update("lists", id: id, ["name": "A"]).isEmpty)
        #expect(try store.record("lists", id: id)?.stamps == before.stamps)
        let changed = try store.update("lists", id: id, ["name": "B"])
        #expect(changed == FieldMask([0]))
        let after = try #require(try store.record("lists", id: id))
        #expect(after.stamps[0] > before.stamps[0])
    }

    @Test func update_rejectsWrongTypesAndUnknownFields() throws {
        let store = try memoryStore()
        let id = try store.insert("lists", values: ["A"])
        #expect(throws: StoreError.self) { try store.update("lists", id: id, ["name": 5]) }
        #expect(throws: StoreError.self) { try store.update("lists", id: id, ["nope": "x"]) }
        #expect(throws: StoreError.self) { try store.update("lists", id: 999, ["name": "x"]) }
        #expect(try store.record("lists", id: id)?.values == ["A"])
    }

    @Test func coalescing_manyEditsOfOneRecordAreOneChange() throws {
        let store = try memoryStore()
        let id = try store.insert("lists", values: ["A"])
        try store.apply(ServerChanges(remaps: [("lists", id, 10)], records: [
            AcknowledgedRecord(try #require(try store.record("lists", id: id)).withID(10), revision: 1),
        ], maxRevision: 1))
        #expect(try store.pendingChanges().isEmpty)
        for name in ["B", "C", "D"] { try store.update("lists", id: 10, ["name": .text(name)]) }
        let pending = try store.pendingChanges()
        #expect(pending.count == 1)
        #expect(pending.first?.kind == .update && pending.first?.revision == 1)
        #expect(pending.first?.record.values == ["D"])
    }

    @Test func createThenDeleteBeforeSync_sendsNothing() throws {
        let store = try memoryStore()
        let id = try store.insert("lists", values: ["A"])
        try store.delete("lists", id: id)
        #expect(try store.pendingChanges().isEmpty)
    }

    @Test func deleteThenRecreateSameId_leavesTheRecordAlive() throws {
        let store = try memoryStore()
        let record = Record(entity: "lists", id: 7, values: ["A"], stamps: [Stamp(clock: 5, replica: ReplicaID(9))])
        try store.apply(ServerChanges(records: [AcknowledgedRecord(record, revision: 3)], maxRevision: 3))
        try store.delete("lists", id: 7)
        #expect(try store.pendingChanges().map(\.kind) == [.delete])
        try store.insert("lists", id: 7, values: ["B"])
        #expect(try store.record("lists", id: 7)?.values == ["B"])
        #expect(try store.record("lists", id: 7)?.isDeleted == false)
        let pending = try store.pendingChanges()
        #expect(pending.map(\.kind) == [.update])
        #expect(pending.first?.revision == 3)
    }

    @Test func delete_cascadesSetsNullAndRestricts() throws {
        let store = try memoryStore()
        let list = try store.insert("lists", values: ["L"])
        let task = try store.insert("tasks", values: ["T", false, 0, .integer(list)])
        let note = try store.insert("notes", values: ["N", .integer(task)])
        let pin = try store.insert("pins", values: [.integer(task)])
        #expect(throws: StoreError.self) { try store.delete("lists", id: list) }  // the pin restricts
        #expect(try store.record("tasks", id: task)?.isDeleted == false)
        #expect(try store.record("notes", id: note)?.values[1] == .integer(task))
        try store.delete("pins", id: pin)
        try store.delete("lists", id: list)
        #expect(try store.record("tasks", id: task)?.isDeleted != false)
        #expect(try store.record("notes", id: note)?.values == ["N", nil])
        #expect(try store.database.scalar("SELECT count(*) FROM tasks") == .integer(0))
    }

    @Test func hostileValuesAreStoredVerbatim() throws {
        let store = try memoryStore()
        let hostile: [String] = [
            "'; DROP TABLE lists; --", "\"quoted\"", "semi;colon", "nul\u{0}inside", String(repeating: "é", count: 100_000),
        ]
        for text in hostile {
            let id = try store.insert("lists", values: [.text(text)])
            #expect(try store.record("lists", id: id)?.values == [.text(text)])
        }
        #expect(try store.database.scalar("SELECT count(*) FROM lists") == .integer(Int64(hostile.count)))
    }
}

extension Record {
    func withID(_ id: Int64) -> Record {
        var copy = self
        copy.id = id
        return copy
    }
}
