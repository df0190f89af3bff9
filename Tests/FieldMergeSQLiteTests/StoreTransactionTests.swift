import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// `Store.transaction { }`: one transaction for a block of edits, rolled back on a throw,
/// nesting as savepoints, reported once (Specs/store.md, "Operations").
@Suite struct StoreTransactionTests {
    struct Stop: Error {}

    private func count(_ store: Store, _ sql: String) throws -> Int64? {
        if case .integer(let value)? = try store.database.scalar(sql) { return value }
        return nil
    }

    @Test func aThrowInsideTheBlock_leavesNothing_andReportsNothing() throws {
        let store = try memoryStore()
        var changes: [StoreChange] = []
        store.onChange = { changes.append($0) }
        let kept = try store.insert("lists", values: ["Kept"])
        changes.removeAll()
        let clock = store.clock.last
        #expect(throws: Stop.self) {
            try store.transaction {
                _ = try store.insert("lists", values: ["Home"])
                _ = try store.update("lists", id: kept, ["name": "Renamed"])
                try store.database.run("INSERT INTO lists (name) VALUES ('plain')")
                throw Stop()
            }
        }
        #expect(try count(store, "SELECT count(*) FROM lists") == 1)
        #expect(try store.record("lists", id: kept)?.values == ["Kept"])
        #expect(try store.pendingChanges().map(\.id) == [kept])
        #expect(try count(store, "SELECT count(*) FROM \"__fm_outbox\"") == 1)
        #expect(try count(store, "SELECT count(*) FROM \"__fm_captured\"") == 0)
        #expect(store.nextTemporaryID == kept - 1)
        #expect(store.clock.last == clock)
        #expect(changes.isEmpty)
        // The store goes on: the next id is the one the rolled-back insert had taken.
        #expect(try store.insert("lists", values: ["After"]) == kept - 1)
    }

    @Test func aCommittedBlock_isOneChangeEvent_withPlainSQLTakenIn() throws {
        let store = try memoryStore()
        var changes: [StoreChange] = []
        store.onChange = { changes.append($0) }
        let (home, work) = try store.transaction {
            let home = try store.insert("lists", values: ["Home"])
            try store.database.run("INSERT INTO lists (name) VALUES (?)", [.text("Plain")])
            let work = try store.insert("lists", values: ["Work"])
            _ = try store.update("lists", id: home, ["name": "Home 2"])
            return (home, work)
        }
        #expect(changes.count == 1)
        #expect(changes.first?.origin == .local)
        #expect(Set(changes.first?.inserted["lists"] ?? []) == [home, home - 1, work])
        #expect(changes.first?.updated["lists"] == [home])
        // The row written with plain SQL inside the block is queued like the others.
        #expect(try store.pendingChanges().count == 3)
        #expect(try count(store, "SELECT count(*) FROM \"__fm_captured\"") == 0)
    }

    @Test func aNestedBlock_isASavepoint_undoneAloneWhenItsThrowIsCaught() throws {
        let store = try memoryStore()
        var changes: [StoreChange] = []
        store.onChange = { changes.append($0) }
        let outer = try store.transaction { () throws -> Int64 in
            let outer = try store.insert("lists", values: ["Outer"])
            do {
                try store.transaction {
                    _ = try store.insert("lists", values: ["Inner"])
                    _ = try store.update("lists", id: outer, ["name": "Changed by inner"])
                    throw Stop()
                }
            } catch is Stop {}
            _ = try store.insert("tasks", values: ["Task", false, 0, .integer(outer)])
            return outer
        }
        #expect(try store.database.rows("SELECT name FROM lists") == [[.text("Outer")]])
        #expect(try count(store, "SELECT count(*) FROM tasks") == 1)
        #expect(try store.pendingChanges().map(\.entity) == ["lists", "tasks"])
        #expect(changes.count == 1)
        #expect(changes.first?.inserted["lists"] == [outer])
        #expect(changes.first?.updated.isEmpty == true)
    }

    @Test func plainSQLWrites_countInPendingAndUnsyncedChanges_atOnce() throws {
        let store = try memoryStore()
        try store.database.run("INSERT INTO lists (name) VALUES (?)", [.text("Plain")])
        #expect(try store.pendingChanges().map(\.kind) == [.create])
        let list = try #require(try store.pendingChanges().first?.id)
        try store.database.run("UPDATE lists SET name = ? WHERE id = ?", [.text("Plain 2"), .integer(list)])
        #expect(try count(store, "SELECT count(*) FROM \"__fm_captured\"") == 1)
        #expect(try store.unsyncedChanges().map(\.id) == [list])
        #expect(try count(store, "SELECT count(*) FROM \"__fm_captured\"") == 0)
    }
}
