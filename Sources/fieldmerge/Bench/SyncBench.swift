import FieldMergeToolSupport
import ArgumentParser
import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeWorkload
import Foundation

struct SyncBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Initial sync of N records to a fresh client, and an incremental sync of 1,000 changes, in process."
    )

    @OptionGroup var workload: WorkloadOptions
    @Option(help: "Records per request (catch-up page size).")
    var batchSize: Int = 10_000
    @Option(help: "Changes in the incremental sync.")
    var changes: Int = 1_000
    @Flag(inversion: .prefixedNo, help: "Gzip request and response bodies.")
    var gzip = true
    @Option(help: "A catch-up commits once a page ends this many milliseconds after its transaction began (0: every page).")
    var commitIntervalMs: Int = 250
    @Option(help: "A catch-up commits once its transaction holds this many records (1: every page).")
    var commitRecords: Int = 100_000
    @Option(help: "During each timed incremental sync, an app write (an empty `write { }`) every this many milliseconds, its longest wait reported (0: none).")
    var writeEveryMs: Int = 0

    var commits: CatchUpCommits { CatchUpCommits(interval: .milliseconds(commitIntervalMs), records: commitRecords) }

    func run() async throws {
        let generated = Workload.generate(records: workload.records, seed: workload.seed)
        let entity = Workload.remindersEntity
        let schema = try Schema([entity])
        let folder = NSTemporaryDirectory() + "fieldmerge-sync-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // The server holds the base: one change set of N creates, not timed.
        // One probe hears every phase of client, transport and server; read after each sync.
        let probe = PhaseTotals()
        var options = RevisionServer.Options()
        options.probe = probe
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: schema, options: options)
        let (base, _, _) = generated.referenceBatches()
        var records: [WireRecord] = []
        records.reserveCapacity(base.count)
        for index in 0..<base.count {
            var record = WireRecord(base.record(at: index, entity: entity.name))
            record.id = -Int64(index) - 1
            records.append(record)
        }
        // As a server that grew over time: change sets of at most 1,000 records, one revision each.
        let changeSets = stride(from: 0, to: records.count, by: 1_000).map { start in
            let slice = Array(records[start..<min(start + 1_000, records.count)])
            return ChangeSet(entities: [EntityChanges(entity: entity.name, create: slice.map(\.id), records: slice)])
        }
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: changeSets))
        _ = probe.take()
        let transport = InProcessTransport(server: server, probe: probe)

        // Initial sync: a fresh client downloads everything, in pages; each run a new replica.
        let runs = max(1, workload.runs)
        var initialTimes: [Double] = []
        var initialPhases: [[SyncPhase: Double]] = []
        var initial = SyncSummary()
        var reader: SyncClient!
        var countOK = true
        for run in 0..<runs {
            let client = SyncClient(
                store: try Store(.file(path: folder + "/reader-\(run).sqlite"), schema: schema, replica: ReplicaID(UInt64(100 + run))),
                transport: transport, gzip: gzip, batchSize: batchSize, probe: probe, catchUpCommits: commits)
            initialTimes.append(try await seconds { initial = try await client.sync() })
            initialPhases.append(probe.take())
            let count = try await client.read { try $0.database.scalar("SELECT count(*) FROM reminders") }
            countOK = countOK && count == .integer(Int64(workload.records))
            reader = client
        }
        var line = BenchLine(step: "sync-initial", records: workload.records, seconds: median(initialTimes), runs: runs,
                             ops: initial.received, opUnit: "records")
        line.add("seconds_all", initialTimes)
        line.add("requests", initial.rounds)
        line.add("gzip", gzip)
        if gzip { line.add("gzip_engine", Gzip.preferredEngine.rawValue) }
        line.add("bytes_on_wire", initial.bytesReceived + initial.bytesSent)
        line.add("digest_ok", countOK)
        line.add("phases_ms", PhaseTotals.medians(initialPhases, seconds: initialTimes))
        print(line.render())

        // Incremental: each run a writer changes `changes` records (untimed); the reader syncs them.
        let writer = SyncClient(
            store: try Store(.file(path: folder + "/writer.sqlite"), schema: schema, replica: ReplicaID(2)),
            transport: transport, gzip: gzip, batchSize: batchSize, probe: probe)
        _ = try await writer.sync()
        _ = probe.take()
        var sample = SplitMix64(seed: workload.seed &+ 7)
        var incrementalTimes: [Double] = [], uploadTimes: [Double] = []
        var incrementalPhases: [[SyncPhase: Double]] = [], uploadPhases: [[SyncPhase: Double]] = []
        var incremental = SyncSummary(), uploaded = SyncSummary()
        var checkOK = true
        var waits: [Double] = []
        let commitsBefore = await reader.catchUpCommitCount
        for run in 0..<runs {
            let edits = (0..<changes).map { n in (id: Int64(sample.below(UInt64(workload.records))) + 1, title: "edit \(run).\(n)") }
            try await writer.write { store in
                for edit in edits { _ = try store.update("reminders", id: edit.id, ["title": .text(edit.title)]) }
            }
            uploadTimes.append(try await seconds { uploaded = try await writer.sync() })
            uploadPhases.append(probe.take())
            // The writer is another device: its background checkpoint is not the reader's time.
            await writer.checkpoint()
            let app = writeEveryMs > 0 ? AppWrites.start(on: reader, every: .milliseconds(writeEveryMs)) : nil
            incrementalTimes.append(try await seconds { incremental = try await reader.sync() })
            if let app { waits += try await app.stop() }
            incrementalPhases.append(probe.take())
            let last = edits.last!
            let check = try await reader.read { try $0.record("reminders", id: last.id)?.values[0] }
            checkOK = checkOK && check == .text(last.title)
        }
        var incrementalLine = BenchLine(step: "sync-incremental", records: workload.records, seconds: median(incrementalTimes),
                                        runs: runs, ops: incremental.received, opUnit: "records")
        incrementalLine.add("seconds_all", incrementalTimes)
        incrementalLine.add("requests", incremental.rounds)
        incrementalLine.add("commit_interval_ms", commitIntervalMs)
        incrementalLine.add("commit_records", commitRecords)
        incrementalLine.add("catch_up_commits_per_run", Double(await reader.catchUpCommitCount - commitsBefore) / Double(runs))
        if writeEveryMs > 0 {
            incrementalLine.add("app_writes", waits.count)
            incrementalLine.add("app_write_wait_max_ms", (waits.max() ?? 0) * 1_000)
            incrementalLine.add("app_write_wait_median_ms", median(waits) * 1_000)
        }
        incrementalLine.add("uploaded", uploaded.sent)
        incrementalLine.add("upload_conflicts", uploaded.conflictingChangeSets)
        incrementalLine.add("digest_ok", checkOK)
        incrementalLine.add("phases_ms", PhaseTotals.medians(incrementalPhases, seconds: incrementalTimes))
        incrementalLine.add("upload_seconds", median(uploadTimes))
        incrementalLine.add("upload_seconds_all", uploadTimes)
        incrementalLine.add("upload_phases_ms", PhaseTotals.medians(uploadPhases, seconds: uploadTimes))
        print(incrementalLine.render())
    }
}

/// The time an async `body` takes, in seconds.
func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
