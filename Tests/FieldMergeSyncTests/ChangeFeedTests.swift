import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Synchronization
import FieldMergeTestSupport
import Testing

/// Collects what a client's change feed reports.
final class ChangeLog: Sendable {
    private let seen = Mutex<[StoreChange]>([])
    func append(_ change: StoreChange) { seen.withLock { $0.append(change) } }
    var changes: [StoreChange] { seen.withLock { $0 } }
    func clear() { seen.withLock { $0 = [] } }
}

@Suite struct ChangeFeedTests {
    @Test func localWritesAndSyncs_reportWhatChanged() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        let log = ChangeLog()
        await b.addObserver { log.append($0) }

        // Records created elsewhere arrive as inserted.
        try await a.write { store in
            let list = try store.insert("lists", values: ["Home"])
            _ = try store.insert("tasks", values: ["Milk", false, 0, .integer(list)])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        #expect(log.changes.count == 1)
        #expect(log.changes.first?.origin == .sync)
        #expect(log.changes.first?.inserted == ["lists": [1], "tasks": [1]])

        // A local insert, then its remap by the sync.
        log.clear()
        try await b.write { store in _ = try store.insert("lists", values: ["Work"]) }
        _ = try await b.sync()
        #expect(log.changes.map(\.origin) == [.local, .sync])
        #expect(log.changes.first?.inserted == ["lists": [-1]])
        #expect(log.changes.last?.remapped == [StoreChange.Remap(entity: "lists", temporary: -1, permanent: 2)])

        // A local delete reports its cascade.
        log.clear()
        try await b.write { store in try store.delete("lists", id: 1) }
        #expect(log.changes.first?.deleted == ["lists": [1], "tasks": [1]])
    }

    @Test func aMergedConflict_isReported() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.write { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        world.walls[1].advance(by: 10)
        try await a.write { store in _ = try store.update("lists", id: 1, ["name": "Home A"]) }
        try await b.write { store in _ = try store.update("lists", id: 1, ["name": "Home B"]) }
        _ = try await a.sync()
        let log = ChangeLog()
        let stream = await b.changes()
        let reader = Task { for await change in stream { log.append(change); if change.origin == .sync { break } } }
        _ = try await b.sync()
        await reader.value
        let conflicts = log.changes.flatMap(\.conflicts)
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.entity == "lists" && conflicts.first?.id == 1)
    }

    @Test func aRolledBackWrite_reportsNothing() throws {
        let store = try Store(.memory, schema: try syncSchema(), replica: ReplicaID(1))
        var seen: [StoreChange] = []
        store.onChange = { seen.append($0) }
        _ = try store.insert("lists", values: ["Home"])
        #expect(throws: StoreError.self) { _ = try store.insert("tasks", values: ["Milk", false, 0, .integer(99)]) }
        #expect(throws: StoreError.self) { _ = try store.update("lists", id: -1, ["name": .integer(3)]) }
        #expect(seen.count == 1)
        #expect(seen.first?.inserted == ["lists": [-1]])
    }
}

@Suite struct ResetTests {
    @Test func reset_dropsLocalDataAndUnsentChanges_andDownloadsAgain() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.write { store in _ = try store.insert("lists", values: ["Shared"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await b.write { store in
            _ = try store.insert("lists", values: ["Unsent"])
            _ = try store.update("lists", id: 1, ["name": "Broken locally"])
            try store.database.execute("UPDATE lists SET name = 'Damaged by hand' WHERE id = 1")
        }
        let log = ChangeLog()
        await b.addObserver { log.append($0) }
        let summary = try await b.reset()
        #expect(summary.received == 1)
        #expect(try await b.read { try $0.database.rows("SELECT id, name FROM lists") } == [[.integer(1), .text("Shared")]])
        #expect(try await b.write { try $0.unsyncedChanges() }.isEmpty)
        #expect(log.changes.first?.isReset == true)
        // Nothing of what was thrown away reached the server.
        _ = try await a.sync()
        #expect(try await a.read { try $0.database.rows("SELECT name FROM lists") } == [[.text("Shared")]])
    }
}

@Suite struct ConflictHistoryTests {
    @Test func decidedConflicts_areKept_andOneCanBeReverted() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.write { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await b.write { store in _ = try store.update("lists", id: 1, ["name": "Home B"]) }
        world.walls[0].advance(by: 10)
        try await a.write { store in _ = try store.update("lists", id: 1, ["name": "Home A"]) }
        _ = try await a.sync()
        _ = try await b.sync()  // A's later edit wins on B
        let history = try await b.write { try $0.conflictHistory() }
        #expect(history.count == 1)
        let entry = try #require(history.first)
        #expect(entry.conflict.entity == "lists" && entry.conflict.id == 1 && entry.conflict.field == "name")
        #expect(entry.conflict.local == .text("Home B") && entry.conflict.remote == .text("Home A"))
        #expect(entry.conflict.winner == .remote && entry.conflict.strategy == "lastEditWins")
        #expect(entry.decidedAt == 1_000_000)
        // Putting back the losing value is a new local edit that syncs everywhere.
        try await b.write { try $0.revert(conflict: entry.seq) }
        _ = try await b.sync()
        _ = try await a.sync()
        for client in [a, b] {
            #expect(try await client.read { try $0.database.scalar("SELECT name FROM lists WHERE id = 1") } == .text("Home B"))
        }
        let unknown = await #expect(throws: StoreError.self) { try await b.write { try $0.revert(conflict: 999) } }
        #expect(unknown?.code == .recordNotFound)
    }

    /// Under `deleteWins` the losing edit's values stay in the history, and reverting the
    /// entry re-creates the record with them, a local create that syncs everywhere.
    @Test func deleteWinsKeepsTheLosingEdit_andRevertRecreatesIt() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.write { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        try await a.write { store in try store.delete("lists", id: 1) }
        try await b.write { store in _ = try store.update("lists", id: 1, ["name": "Home, edited on B"]) }
        _ = try await a.sync()
        _ = try await b.sync()  // the delete wins on B
        #expect(try await b.read { try $0.database.rows("SELECT id FROM lists") }.isEmpty)
        let entry = try #require(try await b.write { try $0.conflictHistory() }.first)
        #expect(entry.conflict.kind == .deleteVsEdit && entry.conflict.winner == .remote && entry.conflict.deletedSide == .remote)
        #expect(entry.conflict.edited?.values == ["Home, edited on B"])
        try await b.write { try $0.revert(conflict: entry.seq) }
        let pending = try await b.write { try $0.pendingChanges() }
        #expect(pending.map(\.kind) == [.create] && pending.first?.record.values == ["Home, edited on B"])
        _ = try await b.sync()
        _ = try await a.sync()
        for client in [a, b] {
            #expect(try await client.read { try $0.database.rows("SELECT name FROM lists") } == [[.text("Home, edited on B")]])
        }
        // Putting back the delete finds record 1 gone already.
        let again = await #expect(throws: StoreError.self) { try await b.write { try $0.revert(conflict: entry.seq, to: .remote) } }
        #expect(again?.code == .recordNotFound)
    }
}
