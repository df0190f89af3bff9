import FieldMerge

extension Store {
    /// Refuses a value an ``FieldType/attachment`` field cannot hold: text that is not a
    /// canonical `AttachmentReference` (Specs/attachments.md). Other fields pass.
    ///
    /// - Throws: ``StoreError/Code/invalidRecord`` naming the field and what is wrong.
    static func checkAttachments(of record: Record, in entity: Entity, fields: FieldMask) throws(StoreError) {
        for index in fields where entity.fields[index].type == .attachment {
            if let refusal = entity.fields[index].type.refusal(of: record.values[index]) {
                throw StoreError(.invalidRecord, "field '\(entity.fields[index].name)': \(refusal)", entity: entity.name, id: record.id)
            }
        }
    }
}
