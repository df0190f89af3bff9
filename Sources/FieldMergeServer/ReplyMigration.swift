import FieldMerge
import FieldMergeProtocol

/// Carries a stored reply through a migration of the server's data set (Specs/schema.md,
/// "Evolution"): read with the old version's schema and written again in the new one,
/// entities renamed, records widened to the added fields, converted values converted. A
/// retry after the upgrade is then still recognised and answered. Every storage uses it.
public struct ReplyMigration: Sendable {
    private let from: WireCodec
    private let to: WireCodec
    private let renamed: [String: String]
    /// Per entity (new name): the fields converted by this migration.
    private let converted: [String: [Int]]

    /// Nil when the migration leaves stored replies as they are (nothing renamed, added or
    /// converted), or when the old version cannot be rebuilt from its lines.
    public init?(old: SchemaOutline, oldVersion: Int, schema: Schema, steps: SchemaMigration.Steps) {
        guard !steps.entityRenames.isEmpty || !steps.addedFields.isEmpty || !steps.convertedFields.isEmpty,
            let oldSchema = try? old.schema(version: oldVersion)
        else { return nil }
        from = WireCodec.everyField(of: oldSchema)
        to = WireCodec.everyField(of: schema)
        renamed = Dictionary(steps.entityRenames.map { ($0.from, $0.to) }, uniquingKeysWith: { a, _ in a })
        converted = Dictionary(grouping: steps.convertedFields, by: \.entity.name).mapValues { $0.map(\.field) }
    }

    /// The reply in the new schema; nil when it cannot be read or carried (it is then left
    /// as it is: its replay fails with an error instead of applying a retry twice).
    public func migrate(_ bytes: [UInt8]) -> [UInt8]? {
        guard var reply = try? StoredReply(decoding: bytes, from),
            let answers = try? reply.answers.changeSets.map(widen)
        else { return nil }
        reply.answers.changeSets = answers
        return reply.encoded(to)
    }

    private func widen(_ changeSet: ChangeSet) throws -> ChangeSet {
        var result = changeSet
        result.refused = changeSet.refused.map { var r = $0; r.entity = renamed[r.entity] ?? r.entity; return r }
        result.entities = try changeSet.entities.map { changes in
            var moved = changes
            moved.entity = renamed[changes.entity] ?? changes.entity
            guard let entity = to.schema.entity(moved.entity) else { throw ServerError(.corrupt, "no entity \(moved.entity)") }
            let fields = converted[entity.name] ?? []
            moved.records = try changes.records.map { record in
                var wide = record
                let added = entity.fields.count - record.values.count
                wide.values += Array(repeating: Value.null, count: max(0, added))
                wide.stamps? += Array(repeating: Stamp.none, count: max(0, added))
                for field in fields where wide.present.contains(field) {
                    wide.values[field] = try entity.fields[field].convert(wide.values[field], entity: entity.name)
                }
                return wide
            }
            return moved
        }
        return result
    }
}
