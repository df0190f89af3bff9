import FieldMerge
import FieldMergeProtocol

/// A record for the wire with the given fields present (and, given `stamp`, every field
/// stamped with it).
public func wire(_ entity: Entity, _ id: Int64, _ values: [String: Value], revision: Int64? = nil, stamp: Stamp? = nil) -> WireRecord {
    var present = FieldMask()
    var row = ContiguousArray<Value>(repeating: .null, count: entity.fields.count)
    for (name, value) in values {
        let index = entity.fieldIndex(name)!
        present.insert(index)
        row[index] = value
    }
    let stamps = stamp.map { ContiguousArray(repeating: $0, count: entity.fields.count) }
    return WireRecord(id: id, present: present, values: row, stamps: stamps, revision: revision, oldID: nil)
}

/// An entity's changes: `create` and `update` as given, `delete` as (id, revision) pairs.
public func changes(_ entity: String, create: [WireRecord] = [], update: [WireRecord] = [], delete: [(Int64, Int64)] = [], schema: Schema) -> EntityChanges {
    let width = schema.entity(entity)!.fields.count
    let deletions = delete.map { WireRecord(id: $0.0, present: FieldMask(), values: ContiguousArray(repeating: .null, count: width), stamps: nil, revision: $0.1, oldID: nil) }
    return EntityChanges(entity: entity, create: create.map(\.id), update: update.map(\.id), delete: delete.map(\.0), records: create + update + deletions)
}
