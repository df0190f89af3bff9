import FieldMergeToolSupport
import ArgumentParser
import FieldMerge
import FieldMergeSQLite
import FieldMergeWorkload
import Foundation

struct StoreBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Applies N merged records to a store holding the base, next to raw SQLite upserts of the same rows."
    )

    @OptionGroup var workload: WorkloadOptions
    @Option(help: "Local edits to time, one transaction each.")
    var edits: Int = 1_000

    func run() throws {
        let generated = Workload.generate(
            records: workload.records, editFraction: workload.editFraction,
            fieldsPerEdit: workload.fieldsPerEdit, seed: workload.seed)
        let entity = Workload.remindersEntity
        let schema = try Schema([entity])
        let (ancestors, local, remote) = generated.referenceBatches()
        let merged = try ThreeWayMerge.mergeBatch(entity, ancestors: ancestors, local: local, remote: remote)
        let baseRecords = (0..<ancestors.count).map { ancestors.record(at: $0, entity: entity.name) }
        let mergedRecords = (0..<merged.count).map { merged.result(at: $0).merged }
        let folder = NSTemporaryDirectory() + "fieldmerge-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // FieldMerge: rows + stamps + pending + ancestors, one transaction.
        let store = try Store(.file(path: folder + "/store.sqlite"), schema: schema, replica: Workload.replicaA)
        try store.apply(ServerChanges(records: baseRecords.map { AcknowledgedRecord($0, revision: 1) }, maxRevision: 1))
        let acknowledged = mergedRecords.map { AcknowledgedRecord($0, revision: 2) }
        // Raw SQLite: prepared-statement upserts of the same rows into a plain table.
        let raw = try Database(.file(path: folder + "/raw.sqlite"))
        try raw.execute("""
            CREATE TABLE reminders (id INTEGER PRIMARY KEY, title TEXT, notes TEXT, isCompleted INTEGER,
              priority INTEGER, dueDate INTEGER, listID INTEGER, position REAL, flagged INTEGER)
            """)
        let upsert = """
            INSERT INTO reminders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
              title = excluded.title, notes = excluded.notes, isCompleted = excluded.isCompleted,
              priority = excluded.priority, dueDate = excluded.dueDate, listID = excluded.listID,
              position = excluded.position, flagged = excluded.flagged
            """
        try rawUpsert(raw, upsert, baseRecords)

        // Alternate the two, so that both see the same machine (disk, cache, the other core).
        var storeTimes: [Double] = [], rawTimes: [Double] = []
        for run in 0...workload.runs {
            let storeTime = try seconds { try store.apply(ServerChanges(records: acknowledged, maxRevision: 2)) }
            let rawTime = try seconds { try rawUpsert(raw, upsert, mergedRecords) }
            if run > 0 { storeTimes.append(storeTime); rawTimes.append(rawTime) }  // run 0 warms up
        }
        let storeSeconds = median(storeTimes), rawSeconds = median(rawTimes)

        let expected = Workload.digest(generated.mergedLaterWriteThenB())
        let digestOK = try digest(store.database) == expected && digest(raw) == expected
        let n = workload.records
        var storeLine = BenchLine(step: "store-apply", records: n, seconds: storeSeconds, runs: workload.runs, ops: n, opUnit: "records")
        storeLine.add("ratio_to_raw", rawSeconds / storeSeconds)
        storeLine.add("digest_ok", digestOK)
        print(storeLine.render())
        var rawLine = BenchLine(step: "store-raw-upsert", records: n, seconds: rawSeconds, runs: workload.runs, ops: n, opUnit: "records")
        rawLine.engine = "sqlite-raw"
        print(rawLine.render())

        // A local edit: one record, one field, one transaction (row, stamps, outbox, clock).
        var sample = SplitMix64(seed: workload.seed)
        let editSeconds = try seconds {
            for edit in 0..<edits {
                let id = Int64(sample.below(UInt64(n))) + 1
                try store.update("reminders", id: id, set: [(field: 3, value: .integer(Int64(edit % 4)))])
            }
        }
        var editLine = BenchLine(step: "store-local-edit", records: n, seconds: editSeconds, runs: 1, ops: edits, opUnit: "edits")
        editLine.add("microseconds_per_edit", editSeconds / Double(edits) * 1e6)
        print(editLine.render())
        if !digestOK { throw ExitCode(1) }
    }

    private func rawUpsert(_ database: Database, _ sql: String, _ records: [Record]) throws {
        try database.transaction {
            let statement = try database.statement(sql)
            for record in records {
                try statement.bind(record.id, at: 1)
                for (index, value) in record.values.enumerated() {
                    switch value {
                    case .text(let v): try statement.bind(v, at: Int32(index + 2))
                    case .integer(let v): try statement.bind(v, at: Int32(index + 2))
                    case .bool(let v): try statement.bind(v ? 1 as Int64 : 0, at: Int32(index + 2))
                    case .real(let v): try statement.bind(v, at: Int32(index + 2))
                    default: try statement.bindNull(at: Int32(index + 2))
                    }
                }
                try statement.execute()
            }
        }
    }

    /// The store is checked, not trusted: the digest of every row read back with plain SQL
    /// must equal the `later_write_then_b` digest.
    private func digest(_ database: Database) throws -> String {
        let statement = try database.statement("""
            SELECT title, notes, isCompleted, priority, dueDate, listID, position, flagged FROM reminders ORDER BY id
            """)
        var rows: [ReminderRow] = []
        while try statement.step() {
            rows.append(ReminderRow(
                title: statement.text(0), notes: statement.text(1), isCompleted: statement.int64(2) == 1,
                priority: statement.int64(3), dueDate: statement.int64(4), listID: statement.int64(5),
                position: statement.double(6), flagged: statement.int64(7) == 1))
        }
        statement.reset()
        return Workload.digest(rows)
    }
}
