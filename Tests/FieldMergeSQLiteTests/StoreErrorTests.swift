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
    static func lists(_ count: Int = Store.bulkApply + 10) -> [AcknowledgedRecord] {
        (1...Int64(count)).map {
            AcknowledgedRecord(Record(entity: "lists", id: $0, values: [.text("L\($0)")], stamps: [Stamp(clock: 9, replica: ReplicaID(2))]), revision: 1)
        }
    }

    /// A large apply takes the capture triggers out of the way for its own writes: they are
    /// back after it, and a rolled-back one leaves them in place too.
    @Test func theTriggersSurviveABulkApply() throws {
        let store = try Store(.memory, schema: storeSchema(), replica: ReplicaID(1))
        let lists = Self.lists()
        #expect(throws: StoreError.self) {
            try store.apply(ServerChanges(records: lists, maxRevision: 1)) { throw CancellationError() }
        }
        try store.apply(ServerChanges(records: lists, maxRevision: 1))
        #expect(try store.database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == .integer(Int64(4 * store.schema.entities.count)))
        try store.database.execute("UPDATE lists SET name = 'Edited with SQL' WHERE id = 3")
        try store.captureExternalWrites()
        #expect(try store.pendingChanges().map(\.id) == [3])
    }

    /// Without triggers of the app's, the connection's triggers are switched off for the
    /// apply: no schema change (other connections keep their prepared statements), and a
    /// write with plain SQL right after it, on the same connection, is captured, also when
    /// the apply failed half-way through its records.
    @Test func aBulkApplyChangesNoSchemaAndFailsWithTheTriggersOn() throws {
        let store = try Store(.memory, schema: storeSchema(), replica: ReplicaID(1))
        let version = try store.database.scalar("PRAGMA schema_version")
        try store.apply(ServerChanges(records: Self.lists(), maxRevision: 1))
        #expect(try store.database.scalar("PRAGMA schema_version") == version)
        // The last record does not fit its entity: the apply throws among its records.
        var broken = Self.lists(Store.bulkApply + 20)
        broken[broken.count - 1] = AcknowledgedRecord(
            Record(entity: "lists", id: 99_999, values: [], stamps: []), revision: 2)
        #expect(throws: StoreError.self) { try store.apply(ServerChanges(records: broken, maxRevision: 2)) }
        #expect(store.maxRevision == 1)
        try store.database.execute("UPDATE lists SET name = 'Edited with SQL' WHERE id = 5")
        try store.captureExternalWrites()
        #expect(try store.pendingChanges().map(\.id) == [5])
    }

    /// A database with a trigger of the app's own: that trigger fires for every record a
    /// large apply writes (the capture triggers are dropped and created again instead of
    /// switching the connection's triggers off), and capture works after it.
    @Test func anAppTriggerStillFiresDuringABulkApply() throws {
        let store = try Store(.memory, schema: storeSchema(), replica: ReplicaID(1))
        try store.database.execute("""
            CREATE TABLE app_log (id INTEGER);
            CREATE TRIGGER app_lists_inserted AFTER INSERT ON lists BEGIN INSERT INTO app_log (id) VALUES (NEW.id); END
            """)
        let lists = Self.lists()
        try store.apply(ServerChanges(records: lists, maxRevision: 1))
        #expect(try store.database.scalar("SELECT count(*) FROM app_log") == .integer(Int64(lists.count)))
        #expect(try store.database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == .integer(Int64(4 * store.schema.entities.count + 1)))
        try store.database.execute("UPDATE lists SET name = 'Edited with SQL' WHERE id = 7")
        try store.captureExternalWrites()
        #expect(try store.pendingChanges().map(\.id) == [7])
    }
}
