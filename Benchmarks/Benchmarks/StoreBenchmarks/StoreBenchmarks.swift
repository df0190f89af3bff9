import Benchmark
import FieldMerge
import FieldMergeBenchmarkSupport
@_spi(Benchmarks) import FieldMergeSQLite
import FieldMergeWorkload

/// Applying the merged result of N records to a store holding the base, in one
/// transaction (Specs/benchmarks.md, "store"), as `fieldmerge bench store` times it. Each
/// iteration gets a fresh store file; filling it with the base is not measured.
let benchmarks: @Sendable () -> Void = {
    for records in Suite.sizes {
        Benchmark(Suite.name("store.apply", records: records), configuration: Suite.configuration(records: records)) {
            benchmark, input in
            for _ in benchmark.scaledIterations {
                let folder = try TemporaryFolder("fieldmerge-store-benchmark")
                let store = try input.storeHoldingBase(at: folder.file("store.sqlite"))
                benchmark.startMeasurement()
                try store.applyServerVersions(input.merged, revision: 2)
                benchmark.stopMeasurement()
            }
        } setup: {
            try StoreInput(records: records)
        }
    }
}

/// The base and the merged records, as the server would acknowledge them.
struct StoreInput {
    let schema: Schema
    let base: [Record]
    let merged: [Record]

    init(records: Int) throws {
        let entity = Workload.remindersEntity
        schema = try Schema([entity])
        let (ancestors, local, remote) = Workload.generate(records: records).referenceBatches()
        let result = try ThreeWayMerge.mergeBatch(entity, ancestors: ancestors, local: local, remote: remote)
        base = (0..<ancestors.count).map { ancestors.record(at: $0, entity: entity.name) }
        merged = (0..<result.count).map { result.result(at: $0).merged }
    }

    func storeHoldingBase(at path: String) throws -> Store {
        let store = try Store(.file(path: path), schema: schema, replica: Workload.replicaA)
        try store.applyServerVersions(base, revision: 1)
        return store
    }
}
