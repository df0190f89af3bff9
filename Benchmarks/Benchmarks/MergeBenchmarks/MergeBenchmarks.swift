import Benchmark
import FieldMerge
import FieldMergeBenchmarkSupport
import FieldMergeWorkload

/// The core's batch three-way merge of all N records: base as ancestor, A's state as local,
/// B's as remote, under the reference stamping (Specs/benchmarks.md, "merge"), as
/// `fieldmerge bench merge` times it.
let benchmarks: @Sendable () -> Void = {
    for records in Suite.sizes {
        Benchmark(Suite.name("merge", records: records), configuration: Suite.configuration(records: records)) {
            benchmark, input in
            for _ in benchmark.scaledIterations {
                blackHole(try input.merge())
            }
        } setup: {
            try MergeInput(records: records)
        }
    }
}

/// The three batches and the merge context; checked once against the reference digest.
struct MergeInput {
    let ancestors: RecordBatch
    let local: RecordBatch
    let remote: RecordBatch
    let context = MergeContext(resolutionStamp: Stamp(clock: Workload.baseTime + 1 << 40, replica: Workload.replicaA))

    init(records: Int) throws {
        let workload = Workload.generate(records: records)
        (ancestors, local, remote) = workload.referenceBatches()
        let merged = try merge()
        guard Workload.digest(Workload.rows(of: merged)) == Workload.digest(workload.mergedLaterWriteThenB()) else {
            throw DigestMismatch(step: "merge", records: records)
        }
    }

    func merge() throws -> BatchMergeResult {
        try ThreeWayMerge.mergeBatch(
            Workload.remindersEntity, ancestors: ancestors, local: local, remote: remote, context: context)
    }
}
