import FieldMerge
import FieldMergeDataSetFile
import FieldMergeProtocol
import FieldMergeServer
import Foundation
import Testing

/// Moving a data set (Specs/reliability.md, "Moving a data set"), written once for every
/// storage that can be copied: a copy serves the same devices as the original without a
/// reset, JSON lines carry every value exactly, and a broken transfer keeps nothing. A
/// storage's suite runs every case with a ``TransferHarness`` of its own (the PostgreSQL
/// suite copies between SQLite and PostgreSQL both ways).
public enum TransferScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case aCopyServesTheSameDevicesWithoutAReset
    case jsonLinesCarryEveryValueExactly
    case aBrokenTransferKeepsNothing

    public var testDescription: String { rawValue }

    public func run(_ harness: TransferHarness) async throws {
        switch self {
        case .aCopyServesTheSameDevicesWithoutAReset: try await Self.sameDevices(harness)
        case .jsonLinesCarryEveryValueExactly: try await Self.jsonLines(harness)
        case .aBrokenTransferKeepsNothing: try await Self.broken(harness)
        }
    }

    static let schema = HostileInputScenario.schema
    /// Note 3's title, which JSON must escape and keep.
    static let hostileTitle = "a \"quoted\"\nline\tand \\ tab, emoji 🦆 and \u{2028} separator"
    static let width = schema.entities[0].fields.count
    static let options: RevisionServer.Options = {
        var options = RevisionServer.Options()
        options.mode = .merge
        return options
    }()

    /// A data set with a little of everything a copy must keep: records whose fields changed
    /// at different revisions (merge mode), tombstones, a horizon (tombstones compacted
    /// through revision 9), marks, id counters and stored replies; values that test JSON.
    static func seeded(_ harness: TransferHarness, _ wall: ManualWallClock) async throws -> RevisionServer {
        let server = try await RevisionServer(storage: try await harness.makeSource(), schema: schema, options: options, wall: wall)
        var revision: Int64 = 0, number = 0
        func send(_ changes: EntityChanges) async throws {
            wall.advance(by: 61_000)
            number += 1
            let response = try await server.handle(
                SyncRequest(maxRevision: revision, changeSets: [ChangeSet(entities: [changes])], clientID: "phone", requestID: "p\(number)"))
            #expect(response.changeSets.last?.conflict == false)
            revision = response.maxRevision
        }
        let titles = ["plain", "", Self.hostileTitle, "é combining e\u{301}", "five", "six"]
        let weights: [Double] = [1, -0.0, 1e300, 5e-324, -1.5, 0.1]
        for (index, title) in titles.enumerated() {
            try await send(HostileInputScenario.note(-1, title, tags: index.isMultiple(of: 2) ? ["b", "a", "z"] : [], weight: weights[index]))
        }
        for (id, created) in [(1, 1), (2, 2), (6, 6)] as [(Int64, Int64)] {
            try await send(Send.delete("notes", id, revision: created, width: width))
        }
        try await send(Send.update("notes", 4, revision: 4, field: 0, .text("edited"), width: width))
        try await send(Send.delete("notes", 5, revision: 5, width: width))
        // Stale: merged with the change at 10, so note 4's fields changed at different revisions.
        try await send(Send.update("notes", 4, revision: 4, field: 2, .real(2.5), width: width))
        let report = try await server.compact(through: 9)
        #expect(report.horizon == 9 && report.removed.tombstones == 3)
        let laptop = SyncRequest(
            maxRevision: 12, changeSets: [ChangeSet(entities: [HostileInputScenario.note(-1, "from the laptop")])], clientID: "laptop", requestID: "l1")
        _ = try await server.handle(laptop)
        return server
    }

    /// The items of `server`'s data set, as lines: what two data sets are compared by.
    static func lines(_ server: RevisionServer) async throws -> [String] {
        try await server.dataSetItems().map { DataSetLines.encode($0, schema: schema) }
    }

    /// A server on a new storage filled with `items`.
    static func copy(_ items: [DataSetItem], _ harness: TransferHarness, _ wall: ManualWallClock) async throws -> RevisionServer {
        let target = try await harness.makeTarget()
        try await target.open(schema: schema)
        _ = try await fill(target, items)
        return try await RevisionServer(storage: target, schema: schema, options: options, wall: wall)
    }

    static func fill<Storage: TransferableServerStorage>(_ storage: Storage, _ items: [DataSetItem]) async throws -> DataSetCounts {
        var iterator = items.makeIterator()
        return try await DataSetImport.run(into: storage, schema: schema, batch: 3) { iterator.next() }
    }

    /// The answers of both servers to the same request: equal, or both the same refusal.
    static func sameAnswer(_ a: RevisionServer, _ b: RevisionServer, _ request: SyncRequest) async throws -> SyncResponse? {
        var answers: [Result<SyncResponse, ServerError>] = []
        for server in [a, b] {
            do { answers.append(.success(try await server.handle(request))) } catch { answers.append(.failure(error)) }
        }
        switch (answers[0], answers[1]) {
        case (.success(let first), .success(let second)):
            #expect(first == second, "revision \(request.maxRevision)")
            return first
        case (.failure(let first), .failure(let second)):
            #expect(first.code == second.code, "revision \(request.maxRevision)")
            return nil
        default:
            Issue.record("one server answered, the other refused, at revision \(request.maxRevision): \(answers)")
            return nil
        }
    }

    static func sameDevices(_ harness: TransferHarness) async throws {
        let wall = ManualWallClock(milliseconds: 1_700_000_000_000)
        let original = try await seeded(harness, wall)
        let items = try await original.dataSetItems()
        let copy = try await copy(items, harness, wall)
        #expect(try await lines(copy) == items.map { DataSetLines.encode($0, schema: schema) })

        // Every device, wherever it stands, hears the same from both: a download, catch-up
        // after the horizon, and resetRequired behind it.
        for revision: Int64 in [0, 1, 5, 8, 9, 10, 11, 12, 13] {
            let answer = try await sameAnswer(original, copy, SyncRequest(maxRevision: revision, changeSets: []))
            if (1..<9).contains(revision) { #expect(answer == nil, "behind the horizon at \(revision)") }
        }
        // A retry of the laptop's last request is replayed from the stored reply.
        let retry = SyncRequest(
            maxRevision: 12, changeSets: [ChangeSet(entities: [HostileInputScenario.note(-1, "from the laptop")])], clientID: "laptop", requestID: "l1")
        let replayed = try await sameAnswer(original, copy, retry)
        #expect(replayed?.maxRevision == 13)
        #expect(replayed?.changeSets.last?.entities.first?.records.first?.id == 7)

        wall.advance(by: 61_000)
        let request = SyncRequest(
            maxRevision: 13, changeSets: [ChangeSet(entities: [HostileInputScenario.note(-1, "next")])], clientID: "tablet", requestID: "t1")
        guard !harness.revisionsMayHaveGaps else {
            // A server whose writes run in parallel took a revision and an id for the replay
            // before it found the reply stored: the next write comes after that gap there.
            for server in [original, copy] {
                let next = try await server.handle(request)
                let created = next.changeSets.last?.entities.first
                #expect(next.changeSets.last?.conflict == false && created?.create.count == 1)
                #expect(next.maxRevision >= 14 && (created?.records.first?.id ?? 0) >= 8)
                #expect(created?.records.first?.values.first == .text("next"))
            }
            return
        }
        // The next write gets the same id, revision and stamps on both.
        let next = try await sameAnswer(original, copy, request)
        #expect(next?.maxRevision == 14)
        #expect(next?.changeSets.last?.entities.first?.records.first?.id == 8)
        #expect(try await lines(copy) == (try await lines(original)))
    }

    static func jsonLines(_ harness: TransferHarness) async throws {
        let wall = ManualWallClock(milliseconds: 1_700_000_000_000)
        let original = try await seeded(harness, wall)
        let lines = try await lines(original)
        var items: [DataSetItem] = []
        for line in lines {
            #expect(!line.contains("\n"))
            items.append(try DataSetLines.decode(Data(line.utf8), schema: schema))
        }
        let copy = try await copy(items, harness, wall)
        #expect(try await Self.lines(copy) == lines)
        let titles = try await HostileInputScenario.notes(copy).compactMap { record -> String? in
            if case .text(let title)? = record.values.first { return title }
            return nil
        }
        #expect(titles.contains(hostileTitle))
    }

    static func broken(_ harness: TransferHarness) async throws {
        let wall = ManualWallClock(milliseconds: 1_700_000_000_000)
        let items = try await seeded(harness, wall).dataSetItems()
        let target = try await harness.makeTarget()
        try await target.open(schema: schema)

        var truncated = items
        truncated.removeLast()
        var countsOff = items
        countsOff.remove(at: countsOff.firstIndex { if case .record = $0 { return true } else { return false } }!)
        var otherSchema = items
        if case .header(var header) = otherSchema[0] {
            header.schemaLines[0] += " "
            otherSchema[0] = .header(header)
        }
        var duplicate = items
        let logRow = duplicate.firstIndex { if case .row(let table, _) = $0 { return table == .log } else { return false } }!
        duplicate.insert(duplicate[logRow], at: logRow)
        var trailing = items
        trailing.append(items[1])
        var headless = items
        headless.removeFirst()

        for (name, broken) in [("truncated", truncated), ("counts", countsOff), ("schema", otherSchema), ("duplicate", duplicate),
                               ("trailing", trailing), ("headless", headless)] {
            var failed = false
            do { _ = try await fill(target, broken) } catch { failed = true }
            #expect(failed, "\(name) was taken")
            #expect(try await isEmpty(target), "\(name) left something behind")
        }
        // The same target then takes the whole data set, and refuses a second one.
        let counts = try await fill(target, items)
        #expect(counts.records["notes"] == 3 && counts.tables["__fm_replies"] == 2 && counts.tables["__fm_marks"] != nil)
        var refused = false
        do { _ = try await fill(target, items) } catch { refused = "\(error)".contains("already holds") }
        #expect(refused)
    }

    static func isEmpty<Storage: TransferableServerStorage>(_ storage: Storage) async throws -> Bool {
        try await storage.read {
            let state = try await storage.state()
            let records = try await storage.records(ServerEntity(schema.entities[0], position: 0), after: 0, limit: 1)
            let log = try await storage.tableRows(.log, after: nil, limit: 1)
            let replies = try await storage.tableRows(.replies, after: nil, limit: 1)
            return state.maxRevision == 0 && records.isEmpty && log.isEmpty && replies.isEmpty
        }
    }
}

/// What a storage gives ``TransferScenario``.
public struct TransferHarness {
    /// A storage on a new, empty place (not opened), for the original data set.
    public var makeSource: () async throws -> any TransferableServerStorage
    /// The same for the copy (another kind of storage, or the same).
    public var makeTarget: () async throws -> any TransferableServerStorage
    /// Whether either storage may leave a revision unused (writes in parallel on
    /// PostgreSQL): the two then give the same write different revisions and ids.
    public var revisionsMayHaveGaps: Bool

    public init(
        makeSource: @escaping () async throws -> any TransferableServerStorage,
        makeTarget: @escaping () async throws -> any TransferableServerStorage,
        revisionsMayHaveGaps: Bool = false
    ) {
        self.makeSource = makeSource
        self.makeTarget = makeTarget
        self.revisionsMayHaveGaps = revisionsMayHaveGaps
    }
}
