import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Testing

/// A device that slept past the server's compaction horizon (Specs/store.md, "Rebasing on a
/// fresh download"): answered `resetRequired`, it downloads the data set again, keeps every
/// unsynced change, merges it three ways with what comes down, drops what the server no
/// longer has, and ends where every other device is.
@Suite struct RebaseTests {
    /// Projects (a counter of minutes) and their tasks (cascade), as in ``RecreationTests``.
    static func schema(_ policy: DeletePolicy) throws -> Schema { try RecreationTests.schema(policy) }

    /// A and B share projects 1...4 with a task each; B goes offline and edits projects 1 and
    /// 2, creates project 5 with a task and deletes project 4; A deletes projects 1 and 3 and
    /// edits project 2's minutes; the server compacts every tombstone.
    static func sleeper(_ policy: DeletePolicy, batchSize: Int = 10_000) async throws -> (a: SyncClient, b: SyncClient, server: RevisionServer) {
        let schema = try schema(policy)
        let server = try RevisionServer(.memory, schema: schema)
        let transport = InProcessTransport(server: server)
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        let b = SyncClient(
            store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport, batchSize: batchSize)
        for n in 1...4 {  // one revision each
            try await a.write { store in
                let project = try store.insert("projects", values: [.text("P\(n)"), 10])
                _ = try store.insert("tasks", values: [.text("T\(n)"), .integer(project)])
            }
            _ = try await a.sync()
        }
        _ = try await b.sync()
        try await b.write { store in
            _ = try store.update("projects", id: 1, ["minutes": 15])
            _ = try store.update("projects", id: 2, ["name": "P2 renamed on B"])
            let project = try store.insert("projects", values: ["P5 from B", 0])
            _ = try store.insert("tasks", values: ["T5 from B", .integer(project)])
            try store.delete("projects", id: 4)
        }
        try await a.write { store in
            try store.delete("projects", id: 1)
            try store.delete("projects", id: 3)
            _ = try store.update("projects", id: 2, ["minutes": 40])
        }
        _ = try await a.sync()
        let report = try await server.compact(through: .max)
        #expect(report.removed.tombstones == 4 && report.horizon == 5)
        return (a, b, server)
    }

    static func rows(_ client: SyncClient) async throws -> [[SQLValue]] {
        try await client.read { store in
            try store.database.rows("SELECT 'p', id, name, minutes FROM projects UNION ALL SELECT 't', id, title, projectID FROM tasks ORDER BY 1, 2")
        }
    }

    @Test func editWins_keepsEveryEditAndDropsWhatTheServerNoLongerHas() async throws {
        let (a, b, _) = try await Self.sleeper(.editWins)
        let summary = try await b.sync()
        let rebase = try #require(summary.rebase)
        #expect(rebase.began && rebase.finished)
        #expect(rebase.unsyncedKept == 6)  // projects 1, 2, 4 and 5, tasks 4 (cascade) and 5
        // Project 3 and its task, and project 1's task: deleted on the server (their
        // tombstones compacted), untouched here, gone.
        #expect(rebase.removed == 3 && rebase.keptWithChanges == 0)
        _ = try await a.sync()
        let onB = try await Self.rows(b)
        #expect(onB == [
            [.text("p"), .integer(1), .text("P1"), .integer(15)],  // B's edit brought it back (its task stays deleted)
            [.text("p"), .integer(2), .text("P2 renamed on B"), .integer(40)],  // both edits, merged
            [.text("p"), .integer(5), .text("P5 from B"), .integer(0)],
            [.text("t"), .integer(2), .text("T2"), .integer(2)],
            [.text("t"), .integer(5), .text("T5 from B"), .integer(5)],
        ])
        let onA = try await Self.rows(a)
        #expect(onA == onB)
        #expect(try await b.write { try $0.unsyncedChanges() }.isEmpty)
        let rebasing = try await b.read { $0.isRebasing }
        #expect(!rebasing)
        // Syncing on is plain again.
        let next = try await b.sync()
        #expect(next.rebase == nil)
    }

    @Test func deleteWins_theCompactedDeleteStillWins() async throws {
        let (a, b, _) = try await Self.sleeper(.deleteWins)
        let summary = try await b.sync()
        #expect(summary.rebase?.finished == true)
        _ = try await a.sync()
        let onB = try await Self.rows(b)
        #expect(onB.map { [$0[0], $0[1]] } == [[.text("p"), .integer(2)], [.text("p"), .integer(5)], [.text("t"), .integer(2)], [.text("t"), .integer(5)]])
        let onA = try await Self.rows(a)
        #expect(onA == onB)
    }

    @Test func aDownloadCutShortGoesOnInTheNextSync() async throws {
        let (a, b, _) = try await Self.sleeper(.editWins, batchSize: 1)
        let first = try await b.sync(maxRounds: 2)
        #expect(first.rebase?.began == true && first.rebase?.finished == false)
        let rebasing = try await b.read { $0.isRebasing }
        #expect(rebasing)
        // Project 3 is still here: the download is not complete.
        #expect(try await b.read { try $0.database.scalar("SELECT count(*) FROM projects WHERE id = 3") } == .integer(1))
        let second = try await b.sync()
        #expect(second.rebase?.began == false && second.rebase?.finished == true && second.rebase?.removed == 3)
        _ = try await a.sync()
        let onB = try await Self.rows(b)
        let onA = try await Self.rows(a)
        #expect(onA == onB && onB.count == 5)
    }

    @Test func aPlainResetStillGivesUpEverything() async throws {
        let (_, b, _) = try await Self.sleeper(.editWins)
        _ = try await b.reset()
        let rebasing = try await b.read { $0.isRebasing }
        #expect(!rebasing)
        #expect(try await b.read { try $0.database.scalar("SELECT minutes FROM projects WHERE id = 2") } == .integer(40))
    }

    @Test func aNewDeviceDownloadingInSmallPagesAfterACompactionIsNotReset() async throws {
        let (a, _, server) = try await Self.sleeper(.editWins)
        let c = SyncClient(
            store: try Store(.memory, schema: try Self.schema(.editWins), replica: ReplicaID(3)),
            transport: InProcessTransport(server: server), batchSize: 1)
        // Every page but the last ends below the horizon; the download began under it.
        let summary = try await c.sync()
        #expect(summary.rebase == nil && summary.rounds > 2)
        let onC = try await Self.rows(c)
        let onA = try await Self.rows(a)
        #expect(onC == onA)
        // Compacted again while C sleeps at the head: nothing it holds was deleted since.
        _ = try await server.compact(through: .max)
        #expect(try await c.sync().rebase == nil)
    }

    @Test func aRefusedChangeOfARecordTheServerNoLongerHasIsKeptAside() async throws {
        let schema = try Self.schema(.editWins)
        var options = RevisionServer.Options()
        options.authorize = { !($0.identity?.user == "b" && $0.kind == .update && $0.entity == "projects" && $0.id == 3) }
        let server = try RevisionServer(.memory, schema: schema, options: options)
        let a = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: InProcessTransport(server: server))
        let b = SyncClient(
            store: try Store(.memory, schema: schema, replica: ReplicaID(2)),
            transport: InProcessTransport(server: server, identity: SyncIdentity(user: "b")))
        for n in 1...4 {
            try await a.write { store in _ = try store.insert("projects", values: [.text("P\(n)"), 10]) }
            _ = try await a.sync()
        }
        _ = try await b.sync()
        try await b.write { store in _ = try store.update("projects", id: 3, ["name": "refused"]) }
        #expect(try await b.sync().refused.map(\.code) == ["unauthorized"])
        try await a.write { store in try store.delete("projects", id: 3) }
        _ = try await a.sync()
        _ = try await server.compact(through: .max)
        let summary = try await b.sync()
        #expect(summary.rebase?.finished == true && summary.rebase?.removed == 1 && summary.rebase?.keptWithChanges == 0)
        // Gone here as on the server; the refused change is kept aside, not lost.
        #expect(try await b.read { try $0.database.scalar("SELECT count(*) FROM projects WHERE id = 3") } == .integer(0))
        let aside = try await b.write { try $0.unsyncedChanges() }
        #expect(aside.map(\.id) == [3] && aside.first?.refusal?.code == KeptAside.code)
        let onB = try await b.read { try $0.database.rows("SELECT id FROM projects ORDER BY id") }
        let onA = try await a.read { try $0.database.rows("SELECT id FROM projects ORDER BY id") }
        #expect(onA == onB)
    }
}
