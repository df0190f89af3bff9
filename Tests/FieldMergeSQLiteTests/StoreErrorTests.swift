import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// Errors say what failed and keep their cause; none masquerades as SQLite's.
@Suite struct StoreErrorTests {
    @Test func damagedMetadata_isCorrupt_notASQLiteFailure() throws {
        let store = try Store(.memory, schema: storeSchema(), replica: ReplicaID(1))
        let id = try store.insert("lists", values: ["Home"])
        try store.database.run("UPDATE lists SET __fm_stamps = x'01'")
        let error = #expect(throws: StoreError.self) { _ = try store.record("lists", id: id) }
        #expect(error?.code == .corrupt)
        #expect(error?.underlying?.isCorrupt == true)
    }

    @Test func aRecordThatDoesNotFit_keepsTheCoresError() throws {
        let store = try Store(.memory, schema: storeSchema(), replica: ReplicaID(1))
        let error = #expect(throws: StoreError.self) { _ = try store.insert("lists", values: [.integer(5)]) }
        #expect(error?.code == .invalidRecord)
        guard case .typeMismatch(let entity, _, let field, _, _)? = error?.mergeError else {
            Issue.record("expected the core's typeMismatch, got \(String(describing: error?.mergeError))")
            return
        }
        #expect(entity == "lists" && field == "name")
    }

    @Test func sqliteItself_stillReportsAsSQLite() {
        let wrapped = StoreError(SQLiteError(code: 5, message: "database is locked"))
        #expect(wrapped.code == .sqlite && wrapped.isBusy)
    }
}

@Suite struct DanglingReferenceTests {
    @Test func aReferenceToNothing_namesTheFieldAndTheMissingRecord() throws {
        let store = try Store(.memory, schema: storeSchema(), replica: ReplicaID(1))
        let insert = #expect(throws: StoreError.self) { _ = try store.insert("tasks", values: ["Milk", false, 0, .integer(42)]) }
        #expect(insert?.code == .danglingReference)
        #expect(insert?.message.contains("'listID'") == true && insert?.message.contains("lists#42") == true)
        let list = try store.insert("lists", values: ["Home"])
        let task = try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
        let update = #expect(throws: StoreError.self) { _ = try store.update("tasks", id: task, ["listID": .integer(7)]) }
        #expect(update?.code == .danglingReference && update?.id == task)
        #expect(try store.record("tasks", id: task)?.values[3] == .integer(list))
    }
}

@Suite struct CaptureAfterBulkApplyTests {
    /// A large apply drops the capture triggers for its own writes: they are back after it,
    /// and a rolled-back one leaves them in place too.
    @Test func theTriggersSurviveABulkApply() throws {
        let store = try Store(.memory, schema: storeSchema(), replica: ReplicaID(1))
        let lists = (1...Int64(Store.bulkApply + 10)).map {
            AcknowledgedRecord(Record(entity: "lists", id: $0, values: [.text("L\($0)")], stamps: [Stamp(clock: 9, replica: ReplicaID(2))]), revision: 1)
        }
        #expect(throws: StoreError.self) {
            try store.apply(ServerChanges(records: lists, maxRevision: 1)) { throw CancellationError() }
        }
        try store.apply(ServerChanges(records: lists, maxRevision: 1))
        #expect(try store.database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == .integer(Int64(4 * store.schema.entities.count)))
        try store.database.execute("UPDATE lists SET name = 'Edited with SQL' WHERE id = 3")
        try store.captureExternalWrites()
        #expect(try store.pendingChanges().map(\.id) == [3])
    }
}
