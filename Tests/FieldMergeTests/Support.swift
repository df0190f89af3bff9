@testable import FieldMerge
import FieldMergeWorkload

/// The workload's seeded SplitMix64 drives every property test.
typealias SeededGenerator = SplitMix64

let replicaL = ReplicaID(1)
let replicaR = ReplicaID(2)

func stamp(_ clock: UInt64, _ replica: ReplicaID = replicaL) -> Stamp { Stamp(clock: clock, replica: replica) }

/// The test entity: one field of each kind, lastEditWins unless a test says otherwise.
func taskEntity(
    strategies: [String: FieldStrategy] = [:], deletePolicy: DeletePolicy = .deleteWins,
    recordStrategy: (any RecordMergeStrategy)? = nil
) -> Entity {
    let fields: [Field] = [
        Field("title", .text), Field("count", .integer), Field("score", .real), Field("tags", .textSet),
        Field("done", .bool), Field("notes", .text),
    ]
    return Entity(
        "tasks", fields: fields.map { field in
            var field = field
            field.strategy = strategies[field.name]
            return field
        }, deletePolicy: deletePolicy, recordStrategy: recordStrategy)
}

/// A record of `entity` with every field stamped `at`, values given by name.
func record(
    _ entity: Entity, id: Int64 = 1, at: Stamp, _ values: [String: Value] = [:], deleted: Stamp? = nil
) -> Record {
    var record = Record(
        entity: entity.name, id: id,
        values: ContiguousArray(entity.fields.map { _ in Value.null }),
        stamps: ContiguousArray(repeating: at, count: entity.fields.count), tombstone: deleted)
    for (name, value) in values { record.values[entity.fieldIndex(name)!] = value }
    return record
}

extension Record {
    /// This record with field `name` set to `value` at `stamp`.
    func with(_ name: String, _ value: Value, at stamp: Stamp, in entity: Entity) -> Record {
        var copy = self
        copy.set(entity.fieldIndex(name)!, value, stamp: stamp)
        return copy
    }

    func deleted(at stamp: Stamp) -> Record {
        var copy = self
        copy.tombstone = stamp
        return copy
    }

    func value(_ name: String, in entity: Entity) -> Value { values[entity.fieldIndex(name)!] }
    func stamp(_ name: String, in entity: Entity) -> Stamp { stamps[entity.fieldIndex(name)!] }
}

func merge(
    _ entity: Entity, _ ancestor: Record?, _ local: Record, _ remote: Record,
    resolution: Stamp = Stamp(clock: 1_000, replica: ReplicaID(9))
) -> MergeResult {
    try! ThreeWayMerge.merge(
        entity, ancestor: ancestor, local: local, remote: remote,
        context: MergeContext(resolutionStamp: resolution))
}
