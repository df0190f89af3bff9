import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Testing

/// Compaction with a horizon (Specs/reliability.md), written once for every storage that
/// compacts: what goes, what a device behind the horizon is told, what stands for a
/// compacted tombstone, and that no id is given twice. A storage's suite runs every case
/// with a ``CompactionHarness`` of its own.
public enum CompactionScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case tombstonesGoInBatchesAndDevicesBehindTheHorizonMustReset
    case aCompactedRecordAnswersAsDeletedAtTheHorizonAndMayBeRecreated
    case anAgeFindsItsRevisionByTheMarks
    case idsAreNeverGivenTwiceAfterCompaction

    public var testDescription: String { rawValue }

    public func run(_ harness: CompactionHarness) async throws {
        switch self {
        case .tombstonesGoInBatchesAndDevicesBehindTheHorizonMustReset: try await Self.batches(harness)
        case .aCompactedRecordAnswersAsDeletedAtTheHorizonAndMayBeRecreated: try await Self.standIn(harness)
        case .anAgeFindsItsRevisionByTheMarks: try await Self.byAge(harness)
        case .idsAreNeverGivenTwiceAfterCompaction: try await Self.idsOnce(harness)
        }
    }

    static let schema = HostileInputScenario.schema
    static let width = schema.entities[0].fields.count
    static let minute: Int64 = 60_000

    /// A server with notes 1...6 (revisions 1...6), then notes 1, 2 and 6 deleted at
    /// revisions 7, 8 and 9, note 4 updated at 10 and note 5 deleted at 11; a minute and a
    /// second between requests, so each revision is marked.
    static func seeded(_ harness: CompactionHarness) async throws -> (RevisionServer, ManualWallClock) {
        let wall = ManualWallClock(milliseconds: 1_700_000_000_000)
        let server = try await harness.makeServer(schema, wall)
        var revision: Int64 = 0
        func send(_ changes: EntityChanges) async throws {
            wall.advance(by: minute + 1_000)
            let response = try await server.handle(SyncRequest(maxRevision: revision, changeSets: [ChangeSet(entities: [changes])]))
            #expect(response.changeSets.last?.conflict == false)
            revision = response.maxRevision
        }
        for n in 1...6 { try await send(HostileInputScenario.note(-1, "note \(n)")) }
        for (id, created) in [(1, 1), (2, 2), (6, 6)] as [(Int64, Int64)] {
            try await send(Send.delete("notes", id, revision: created, width: width))
        }
        try await send(Send.update("notes", 4, revision: 4, field: 0, .text("edited"), width: width))
        try await send(Send.delete("notes", 5, revision: 5, width: width))
        #expect(revision == 11)
        return (server, wall)
    }

    /// Catch-up from `revision`: the ids listed alive and deleted.
    static func catchUp(_ server: RevisionServer, after revision: Int64) async throws -> (alive: Set<Int64>, deleted: Set<Int64>) {
        let response = try await server.handle(SyncRequest(maxRevision: revision, changeSets: []))
        let notes = response.changeSets.first?.entities.first
        let deleted = Set(notes?.delete ?? [])
        return (Set(notes?.records.map(\.id) ?? []).subtracting(deleted), deleted)
    }

    static func batches(_ harness: CompactionHarness) async throws {
        let (server, _) = try await seeded(harness)
        let dry = try await server.compact(through: 9, batch: 2, dryRun: true)
        #expect(dry.dryRun && dry.batches == 0 && dry.through == 9 && dry.horizon == 0)
        #expect(dry.removed == CompactionCounts(tombstones: 3, highest: 9))
        let before = try await catchUp(server, after: 0)
        #expect(before.deleted == [1, 2, 5, 6])

        let report = try await server.compact(through: 9, batch: 2)
        #expect(report.removed == CompactionCounts(tombstones: 3, highest: 9))
        #expect(report.batches == 2 && report.horizon == 9 && !report.dryRun)
        // A fresh download no longer hears of them; the delete after the horizon stays.
        let fresh = try await catchUp(server, after: 0)
        #expect(fresh.alive == [3, 4] && fresh.deleted == [5])
        let logged = try await harness.logEntries(server)
        #expect(logged == 3)

        // Behind the horizon (and not fresh): refused whole, 409 resetRequired.
        var refused: ServerError?
        do { _ = try await server.handle(SyncRequest(maxRevision: 8, changeSets: [])) } catch { refused = error }
        #expect(refused?.code == .resetRequired && refused?.status == 409)
        #expect(refused?.body.error == SyncStatus.resetRequired)
        // At the horizon nothing was missed.
        let atHorizon = try await catchUp(server, after: 9)
        #expect(atHorizon.alive == [4] && atHorizon.deleted == [5])
        // Compacting again through the same revision finds nothing and moves nothing.
        let again = try await server.compact(through: 9)
        #expect(again.removed.isEmpty && again.horizon == 9 && again.batches == 1)
        // Through a revision beyond the data set's: the data set's.
        let all = try await server.compact(through: 1_000)
        #expect(all.through == 11 && all.removed == CompactionCounts(tombstones: 1, highest: 11) && all.horizon == 11)
    }

    static func standIn(_ harness: CompactionHarness) async throws {
        let (server, _) = try await seeded(harness)
        _ = try await server.compact(through: 9)
        // A device at the horizon edits note 2, whose delete (revision 8) it never saw:
        // the truth says deleted at the horizon, with no stamp.
        let stale = try await server.handle(SyncRequest(maxRevision: 9, changeSets: [Send.changeSet(
            Send.update("notes", 2, revision: 2, field: 0, .text("late edit"), width: width))]))
        let truth = try #require(stale.changeSets.last)
        #expect(truth.conflict == true)
        #expect(truth.entities.first?.delete == [2])
        #expect(truth.entities.first?.records.first?.revision == 9)
        #expect(truth.entities.first?.records.first?.stamps?.allSatisfy { $0 == .none } == true)
        // So does a delete of one.
        let delete = try await server.handle(SyncRequest(maxRevision: 9, changeSets: [Send.changeSet(
            Send.delete("notes", 1, revision: 1, width: width))]))
        #expect(delete.changeSets.last?.conflict == true && delete.changeSets.last?.entities.first?.delete == [1])
        // Re-created naming any revision up to the horizon: alive again under its id.
        var recreate = EntityChanges(entity: "notes")
        recreate.recreate = [2]
        recreate.records = [WireRecord(id: 2, present: FieldMask.all(count: width), values: [.text("back"), .textSet(TextSet([])), .real(1)], revision: 9)]
        let back = try await server.handle(SyncRequest(maxRevision: 11, changeSets: [ChangeSet(entities: [recreate])]))
        #expect(back.changeSets.last?.conflict == false)
        #expect(back.changeSets.last?.entities.first?.update == [2])
        let recreated = try await catchUp(server, after: 11)
        #expect(recreated.alive == [2])
        // Naming a revision past the horizon is stale: a conflict.
        recreate.recreate = [6]
        recreate.records[0].id = 6
        recreate.records[0].revision = 10
        let late = try await server.handle(SyncRequest(maxRevision: 12, changeSets: [ChangeSet(entities: [recreate])]))
        #expect(late.changeSets.last?.conflict == true && late.changeSets.last?.entities.first?.delete == [6])
        // An id never given is still refused as it was: nothing stands in for it.
        recreate.recreate = [99]
        recreate.records[0].id = 99
        recreate.records[0].revision = 9
        let never = try await server.handle(SyncRequest(maxRevision: 12, changeSets: [ChangeSet(entities: [recreate])]))
        #expect(never.changeSets.last?.refused.map(\.code) == ["notDeleted"])
    }

    static func byAge(_ harness: CompactionHarness) async throws {
        let (server, wall) = try await seeded(harness)
        // Revision 11 was marked just now, 10 a minute before, 9 two: older than 90 s is 9.
        let report = try await server.compact(olderThan: 90_000)
        #expect(report.through == 9 && report.removed == CompactionCounts(tombstones: 3, highest: 9))
        // Nothing is older than the first mark: nothing to compact.
        wall.advance(by: -100 * minute)
        let none = try await server.compact(olderThan: 0)
        #expect(none.through == 0 && none.removed.isEmpty && none.horizon == 9)
    }

    static func idsOnce(_ harness: CompactionHarness) async throws {
        let (server, _) = try await seeded(harness)
        // A data set seeded without counters (imported): ids follow the largest there is.
        try await harness.dropIDCounters(server)
        _ = try await server.compact(through: 11)
        let created = try await server.handle(SyncRequest(maxRevision: 11, changeSets: [Send.changeSet(HostileInputScenario.note(-1, "new"))]))
        // Note 6 was the largest id and is compacted: the next is 7, not 6 again.
        #expect(created.changeSets.last?.entities.first?.create == [7])
    }
}

/// How a storage's suite runs ``CompactionScenario``s.
public struct CompactionHarness {
    /// A server on a new, empty data set of `schema`, on `wall`.
    public var makeServer: (Schema, ManualWallClock) async throws -> RevisionServer
    /// How many entries the server's log holds.
    public var logEntries: (RevisionServer) async throws -> Int
    /// Removes every id counter (`__fm_ids`), as in a data set seeded without them.
    public var dropIDCounters: (RevisionServer) async throws -> Void

    public init(
        makeServer: @escaping (Schema, ManualWallClock) async throws -> RevisionServer,
        logEntries: @escaping (RevisionServer) async throws -> Int,
        dropIDCounters: @escaping (RevisionServer) async throws -> Void
    ) {
        self.makeServer = makeServer
        self.logEntries = logEntries
        self.dropIDCounters = dropIDCounters
    }
}
