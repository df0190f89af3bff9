import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Refuses, before anything is applied, a request whose change sets do not say
    /// unambiguously what to do: every listed record has exactly one attributes entry, every
    /// entry belongs to a listed record, no id is listed twice in one entity of one change
    /// set, created ids are negative, and updates and deletes name the revision they were
    /// made on; and no value is a real that is not finite (the wire has no form for it, so
    /// no answer could carry it: only a caller in the same process can send one).
    ///
    /// - Throws: ``ServerError/Code/badRequest`` naming the change set, entity and id.
    static func validate(_ request: SyncRequest) throws(ServerError) {
        for (position, changeSet) in request.changeSets.enumerated() {
            for changes in changeSet.entities {
                func refuse(_ problem: String) -> ServerError {
                    ServerError(.badRequest, "change set \(position), \(changes.entity): \(problem)")
                }
                var attributes: [Int64: WireRecord] = [:]
                attributes.reserveCapacity(changes.records.count)
                for record in changes.records {
                    guard attributes.updateValue(record, forKey: record.id) == nil else {
                        throw refuse("record \(record.id) has two attributes entries")
                    }
                    for case .real(let number) in record.values where !number.isFinite {
                        throw refuse("record \(record.id) holds the real \(number), which is not finite (JSON has no form for it)")
                    }
                }
                var listed = Set<Int64>()
                listed.reserveCapacity(attributes.count)
                for (kind, ids) in [
                    ("create", changes.create), ("update", changes.update), ("delete", changes.delete), ("recreate", changes.recreate),
                ] {
                    for id in ids {
                        guard listed.insert(id).inserted else { throw refuse("record \(id) is listed twice") }
                        if kind == "recreate" {
                            guard id > 0 else { throw refuse("re-created ids are the permanent ids of deleted records, got \(id)") }
                        }
                        if kind == "create" {
                            guard id < 0 else { throw refuse("created ids must be negative temporary ids, got \(id)") }
                            guard attributes[id] != nil else { throw refuse("no attributes for created record \(id)") }
                        } else {
                            guard let record = attributes[id] else { throw refuse("no attributes for \(kind)d record \(id)") }
                            guard record.revision != nil else {
                                throw refuse("the \(kind) of record \(id) names no revision (the revision it was made on)")
                            }
                        }
                    }
                }
                for id in attributes.keys where !listed.contains(id) {
                    throw refuse("attributes for record \(id), which is in none of create, update, delete and recreate")
                }
            }
        }
    }

    /// Refuses a request that writes, to an ``FieldType/attachment`` field of `schema`, text
    /// that is not a canonical `AttachmentReference` (Specs/attachments.md): the whole
    /// request, before anything is applied, as for any value of the wrong type.
    ///
    /// - Throws: ``ServerError/Code/badRequest`` naming the change set, entity, id and field.
    static func validateAttachments(_ request: SyncRequest, schema: Schema) throws(ServerError) {
        for (position, changeSet) in request.changeSets.enumerated() {
            for changes in changeSet.entities {
                guard let entity = schema.entity(changes.entity) else { continue }
                let fields = entity.fields.indices.filter { entity.fields[$0].type == .attachment }
                guard !fields.isEmpty else { continue }
                for record in changes.records {
                    for index in fields where record.present.contains(index) {
                        if let refusal = entity.fields[index].type.refusal(of: record.values[index]) {
                            throw ServerError(
                                .badRequest, "change set \(position), \(changes.entity): record \(record.id) field '\(entity.fields[index].name)': \(refusal)")
                        }
                    }
                }
            }
        }
    }

    /// Refuses a request whose reply key (the user, `clientID`, `requestID`) holds U+0000:
    /// a storage keeps them as text, and PostgreSQL's text cannot hold it.
    ///
    /// - Throws: ``ServerError/Code/badRequest`` naming the member.
    static func validateReplyKey(_ request: SyncRequest, identity: SyncIdentity?) throws(ServerError) {
        for (name, text) in [("clientID", request.clientID), ("requestID", request.requestID), ("the sender's user", identity?.user)] {
            if let text, text.utf8.contains(0) {
                throw ServerError(.badRequest, "\(name) holds the character U+0000, which the server cannot store")
            }
        }
    }
}
