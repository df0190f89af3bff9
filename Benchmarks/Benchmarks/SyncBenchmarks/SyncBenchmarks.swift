import Benchmark
import FieldMerge
import FieldMergeBenchmarkSupport
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeWorkload

/// Initial sync of N records from a server to a fresh client in process, gzip on, pages of
/// 10,000 (Specs/benchmarks.md, "sync"), as `fieldmerge bench sync` times it. The server is
/// filled once; each iteration syncs a new client store, created outside the measurement.
let benchmarks: @Sendable () -> Void = {
    for records in Suite.sizes {
        Benchmark(Suite.name("sync.initial", records: records), configuration: Suite.configuration(records: records)) {
            benchmark, input in
            for _ in benchmark.scaledIterations {
                let folder = try TemporaryFolder("fieldmerge-sync-benchmark")
                let store = try Store(.file(path: folder.file("client.sqlite")), schema: input.schema)
                let client = SyncClient(store: store, transport: input.transport, gzip: true, batchSize: 10_000)
                benchmark.startMeasurement()
                let summary = try await client.sync()
                benchmark.stopMeasurement()
                guard summary.received == records else { throw DigestMismatch(step: "sync.initial", records: records) }
            }
        } setup: {
            try await SyncInput(records: records)
        }
    }
}

/// A server holding the base, grown as change sets of 1,000 creates, behind an in-process
/// transport.
struct SyncInput: Sendable {
    let schema: Schema
    let transport: InProcessTransport
    let folder: TemporaryFolder

    init(records: Int) async throws {
        let entity = Workload.remindersEntity
        schema = try Schema([entity])
        folder = try TemporaryFolder("fieldmerge-sync-server")
        let server = try RevisionServer(.file(path: folder.file("server.sqlite")), schema: schema)
        let (base, _, _) = Workload.generate(records: records).referenceBatches()
        let creates = (0..<base.count).map { index in
            var record = WireRecord(base.record(at: index, entity: entity.name))
            record.id = -Int64(index) - 1
            return record
        }
        let changeSets = stride(from: 0, to: creates.count, by: 1_000).map { start in
            let slice = Array(creates[start..<min(start + 1_000, creates.count)])
            return ChangeSet(entities: [EntityChanges(entity: entity.name, create: slice.map(\.id), records: slice)])
        }
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: changeSets))
        transport = InProcessTransport(server: server)
    }
}
