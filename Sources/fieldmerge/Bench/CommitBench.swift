import FieldMergeToolSupport
import ArgumentParser
import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeWorkload
import Foundation

/// What one answered request costs on a server file: many small requests, one record each,
/// with SQLite's `synchronous = NORMAL` (the default) and `FULL` (`serve --durable`).
struct CommitBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "commits",
        abstract: "Small requests (one created record each) against a server file, synchronous NORMAL and FULL."
    )

    @Option(help: "Requests per mode.")
    var requests = 1_000

    func run() async throws {
        let entity = Workload.remindersEntity
        let schema = try Schema([entity])
        let folder = NSTemporaryDirectory() + "fieldmerge-commit-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let generated = Workload.generate(records: 1, seed: 42)
        var record = WireRecord(generated.referenceBatches().ancestors.record(at: 0, entity: entity.name))
        record.id = -1
        var request = SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            EntityChanges(entity: entity.name, create: [-1], records: [record]),
        ])])
        for durable in [false, true] {
            var options = Database.Options()
            options.durableAcrossPowerLoss = durable
            request.maxRevision = 0
            let server = try RevisionServer(.file(path: folder + "/server-\(durable).sqlite"), schema: schema, database: options)
            let elapsed = try await seconds {
                // Each on the revision the last answer gave: no catch-up, only the commit.
                for _ in 0..<requests { request.maxRevision = try await server.handle(request).maxRevision }
            }
            var line = BenchLine(step: durable ? "commit-full" : "commit-normal", records: requests, seconds: elapsed, runs: 1,
                                 ops: requests, opUnit: "requests")
            line.add("milliseconds_per_request", elapsed * 1_000 / Double(requests))
            line.add("synchronous", durable ? "FULL" : "NORMAL")
            print(line.render())
        }
    }
}
