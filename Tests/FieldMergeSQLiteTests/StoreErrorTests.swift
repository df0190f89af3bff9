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
