import Benchmark
import FieldMerge
import FieldMergeBenchmarkSupport
import FieldMergeProtocol
import FieldMergeWorkload

/// The wire codec on one change set carrying all N records, every field with its stamp and
/// a revision (Specs/benchmarks.md, "codec"), as `fieldmerge bench codec` times it.
let benchmarks: @Sendable () -> Void = {
    for records in Suite.sizes {
        Benchmark(Suite.name("codec.encode", records: records), configuration: Suite.configuration(records: records)) {
            benchmark, input in
            for _ in benchmark.scaledIterations {
                blackHole(input.codec.encode(input.response))
            }
        } setup: {
            try CodecInput(records: records)
        }

        Benchmark(Suite.name("codec.decode", records: records), configuration: Suite.configuration(records: records)) {
            benchmark, input in
            for _ in benchmark.scaledIterations {
                blackHole(try input.codec.decodeResponse(input.encoded))
            }
        } setup: {
            try CodecInput(records: records)
        }
    }
}

/// The codec, the change set and its encoding; the round trip is checked once.
struct CodecInput {
    let codec: WireCodec
    let response: SyncResponse
    let encoded: [UInt8]

    init(records: Int) throws {
        codec = WireCodec(schema: try Schema([Workload.remindersEntity]))
        response = Self.changeSet(Workload.generate(records: records))
        encoded = codec.encode(response)
        guard try codec.decodeResponse(encoded) == response else { throw DigestMismatch(step: "codec", records: records) }
    }

    /// Every record of replica A's state in `update`: all fields present, stamped, revision 1
    /// (the change set of `fieldmerge bench codec`).
    static func changeSet(_ workload: Workload) -> SyncResponse {
        let (_, local, _) = workload.referenceBatches()
        let entity = Workload.remindersEntity.name
        let all = FieldMask.all(count: local.fieldCount)
        var records: [WireRecord] = []
        records.reserveCapacity(local.count)
        for index in 0..<local.count {
            let record = local.record(at: index, entity: entity)
            records.append(WireRecord(id: record.id, present: all, values: record.values, stamps: record.stamps, revision: 1))
        }
        let changes = EntityChanges(entity: entity, update: records.map(\.id), records: records)
        return SyncResponse(maxRevision: 2, changeSets: [ChangeSet(entities: [changes], conflict: false)])
    }
}
