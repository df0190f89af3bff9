import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// The refusal code of a record holding a value some storage cannot keep.
    public static let unstorableCode = "unstorable"

    /// `changeSet` as every storage can keep it, checked before any storage sees it so that
    /// SQLite and PostgreSQL answer alike (Specs/protocol.md §2, "Values every storage
    /// keeps"): a created, updated or re-created record with a text or text-set value that
    /// holds U+0000 (PostgreSQL's text cannot) is left out and refused on its own (code
    /// ``unstorableCode``); a real -0.0 becomes 0.0 (SQLite does not keep the sign of zero).
    /// The other records of the change set stay.
    ///
    /// - Throws: ``ServerRefusal/unknownEntity(_:)`` for an entity the schema does not have,
    ///   even in a change set that changes nothing (the request is then a bad request).
    func storable(_ changeSet: ChangeSet) throws(ServerRefusal) -> (changeSet: ChangeSet, refused: [RefusedRecord]) {
        var kept = changeSet
        var refused: [RefusedRecord] = []
        for (position, changes) in changeSet.entities.enumerated() {
            let entity = try entity(changes.entity).entity
            var written = Set(changes.create)
            written.formUnion(changes.update)
            written.formUnion(changes.recreate)
            var out: Set<Int64> = []
            var records = changes.records
            for index in records.indices {
                Self.positiveZero(&records[index].values)
                guard written.contains(records[index].id) else { continue }
                if let field = Self.unstorableField(records[index], entity: entity) {
                    out.insert(records[index].id)
                    refused.append(RefusedRecord(
                        entity: changes.entity, id: records[index].id, code: Self.unstorableCode,
                        message: "field '\(entity.fields[field].name)' holds the character U+0000, which the server cannot store"))
                } else if let (field, sha256) = Self.missingAttachment(records[index], entity: entity, missing: missingAttachments) {
                    out.insert(records[index].id)
                    refused.append(RefusedRecord(
                        entity: changes.entity, id: records[index].id, code: Self.attachmentMissingCode,
                        message: "field '\(entity.fields[field].name)' references the attachment \(sha256), whose bytes the server "
                            + "does not hold: upload them (PUT /attachments/\(sha256)), then send the record again"))
                }
            }
            var entityChanges = changes
            entityChanges.records = out.isEmpty ? records : records.filter { !out.contains($0.id) }
            if !out.isEmpty {
                entityChanges.create.removeAll { out.contains($0) }
                entityChanges.update.removeAll { out.contains($0) }
                entityChanges.recreate.removeAll { out.contains($0) }
            }
            kept.entities[position] = entityChanges
        }
        return (kept, refused)
    }

    /// The first field of `record` whose value holds U+0000: text, or a member of a text set.
    static func unstorableField(_ record: WireRecord, entity: Entity) -> Int? {
        record.present.first { index in
            switch record.values[index] {
            case .text(let text): text.utf8.contains(0)
            case .textSet(let set): set.contains { $0.utf8.contains(0) }
            default: false
            }
        }
    }

    /// -0.0 as 0.0, in place.
    static func positiveZero(_ values: inout ContiguousArray<Value>) {
        for index in values.indices {
            if case .real(let real) = values[index], real == 0, real.sign == .minus { values[index] = .real(0) }
        }
    }
}

extension ChangeSet {
    /// Whether it creates, updates, deletes or re-creates anything: a change set that does
    /// none of these takes no revision (Specs/protocol.md §2).
    var changesSomething: Bool {
        entities.contains { !$0.create.isEmpty || !$0.update.isEmpty || !$0.delete.isEmpty || !$0.recreate.isEmpty }
    }
}
