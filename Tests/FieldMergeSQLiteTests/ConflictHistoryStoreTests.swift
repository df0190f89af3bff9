import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// The conflict history keeps which side deleted and why a fallback decided, also in a store
/// made before it kept them.
@Suite struct ConflictHistoryStoreTests {
    static let conflicts = [
        FieldConflict(
            at: "lists", id: 1, kind: .deleteVsEdit, field: nil, fieldIndex: nil, ancestor: nil, ancestorStamp: nil,
            local: nil, localStamp: Stamp(milliseconds: 5, replica: ReplicaID(1)), remote: nil,
            remoteStamp: Stamp(milliseconds: 6, replica: ReplicaID(2)), strategy: "deleteWins", winner: .local,
            result: nil, deletedSide: .local),
        FieldConflict(
            at: "lists", id: 2, kind: .field, field: "name", fieldIndex: 0, ancestor: .text("a"),
            ancestorStamp: Stamp(milliseconds: 1, replica: ReplicaID(1)), local: .text("b"),
            localStamp: Stamp(milliseconds: 7, replica: ReplicaID(1)), remote: .text("c"),
            remoteStamp: Stamp(milliseconds: 8, replica: ReplicaID(2)), strategy: "text", winner: .remote,
            result: .text("c"), fallback: .editBudgetExhausted),
    ]

    @Test func deletedSideAndFallback_areKept() throws {
        let store = try memoryStore()
        try store.apply({ var changes = ServerChanges(); changes.conflicts = Self.conflicts; return changes }())
        let history = try store.conflictHistory().map(\.conflict)
        #expect(history.map(\.deletedSide) == [nil, .local])
        #expect(history.map(\.fallback) == [.editBudgetExhausted, nil])
        #expect(history.reversed() == Self.conflicts)
    }

    @Test func aHistoryTableFromBefore_getsTheColumns() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("old.sqlite")
        do {
            let store = try Store(.file(path: path), schema: storeSchema())
            try store.database.execute("ALTER TABLE \"__fm_conflicts\" DROP COLUMN \"fallback\"")
            try store.database.execute("ALTER TABLE \"__fm_conflicts\" DROP COLUMN \"deletedSide\"")
            store.database.close()
        }
        let store = try Store(.file(path: path), schema: storeSchema())
        try store.apply({ var changes = ServerChanges(); changes.conflicts = Self.conflicts; return changes }())
        #expect(try store.conflictHistory().first?.conflict.fallback == .editBudgetExhausted)
    }
}
