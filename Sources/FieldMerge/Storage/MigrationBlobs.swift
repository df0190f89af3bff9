import FieldMerge

/// A migration's re-encoding of the stamps and ancestors a store keeps in blobs.
package protocol BlobRewrite {
    func stamps(_ bytes: [UInt8], id: Int64) throws -> [UInt8]
    func ancestor(_ bytes: [UInt8], id: Int64) throws -> [UInt8]
}

/// Stamps and ancestors with a retired field emptied: no stamp, a null value.
package struct BlobRetire: BlobRewrite {
    let entity: Entity, field: Int

    package init(entity: Entity, field: Int) { (self.entity, self.field) = (entity, field) }

    package func stamps(_ bytes: [UInt8], id: Int64) throws -> [UInt8] {
        var stamps = try bytes.withUnsafeBytes { (raw) throws(RecordCodingError) in
            try RecordCoding.decodeStamps(raw, count: entity.fields.count)
        }
        stamps[field] = .none
        var out: [UInt8] = []
        RecordCoding.encodeStamps(stamps, into: &out)
        return out
    }

    package func ancestor(_ bytes: [UInt8], id: Int64) throws -> [UInt8] {
        var (record, revision) = try bytes.withUnsafeBytes { (raw) throws(RecordCodingError) in
            try RecordCoding.decodeAncestor(raw, entity: entity, id: id)
        }
        record.values[field] = .null
        record.stamps[field] = .none
        var out: [UInt8] = []
        RecordCoding.encodeAncestor(record, revision: revision, entity: entity, into: &out)
        return out
    }
}

/// Ancestors with a field converted to its new type; stamps as they are.
package struct BlobConvert: BlobRewrite {
    let before: Entity, after: Entity, field: Int

    package init(before: Entity, after: Entity, field: Int) { (self.before, self.after, self.field) = (before, after, field) }

    package func stamps(_ bytes: [UInt8], id: Int64) throws -> [UInt8] { bytes }

    package func ancestor(_ bytes: [UInt8], id: Int64) throws -> [UInt8] {
        var (record, revision) = try bytes.withUnsafeBytes { (raw) throws(RecordCodingError) in
            try RecordCoding.decodeAncestor(raw, entity: before, id: id)
        }
        record.values[field] = try after.fields[field].convert(record.values[field], entity: after.name)
        var out: [UInt8] = []
        RecordCoding.encodeAncestor(record, revision: revision, entity: after, into: &out)
        return out
    }
}

/// Re-encodes stamps and ancestors of records for fields added at the end of an entity.
package struct BlobGrowth: BlobRewrite {
    let before: Entity, after: Entity, added: [Field]

    package init(before: Entity, after: Entity, added: [Field]) { (self.before, self.after, self.added) = (before, after, added) }

    package func stamps(_ bytes: [UInt8], id: Int64) throws -> [UInt8] {
        try Self.growStamps(bytes, from: before.fields.count, adding: added.count)
    }

    /// Stamps of `count` fields with `adding` more, stamped ``Stamp/schemaDefault``.
    package static func growStamps(_ bytes: [UInt8], from count: Int, adding: Int) throws(RecordCodingError) -> [UInt8] {
        let decoded: Result<ContiguousArray<Stamp>, RecordCodingError> = bytes.withUnsafeBytes { raw in
            Result { () throws(RecordCodingError) in try RecordCoding.decodeStamps(raw, count: count) }
        }
        var stamps = try decoded.get()
        stamps += Array(repeating: Stamp.schemaDefault, count: adding)
        var out: [UInt8] = []
        RecordCoding.encodeStamps(stamps, into: &out)
        return out
    }

    package func ancestor(_ bytes: [UInt8], id: Int64) throws -> [UInt8] {
        let (record, revision) = try bytes.withUnsafeBytes { (raw) throws(RecordCodingError) in
            try RecordCoding.decodeAncestor(raw, entity: before, id: id)
        }
        var grown = Record(
            entity: after.name, id: id, values: record.values + added.map(\.defaultValue),
            stamps: record.stamps + Array(repeating: Stamp.schemaDefault, count: added.count))
        grown.tombstone = record.tombstone
        var out: [UInt8] = []
        RecordCoding.encodeAncestor(grown, revision: revision, entity: after, into: &out)
        return out
    }
}
