import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// The refusal code of a record that references an attachment whose bytes the server
    /// does not hold (Specs/attachments.md): the client uploads them, then sends it again.
    public static let attachmentMissingCode = "attachmentMissing"

    /// The hashes that the created, updated or re-created records of `request` reference in
    /// attachment fields and that ``Options/attachments`` has not finished; empty without a
    /// store. Asked before the request's transaction (the store is not the database); each
    /// hash held is marked in use (`CollectingAttachmentStore/keep(_:)`), so that garbage
    /// collection does not remove it before the transaction commits.
    func attachmentsNotHeld(by request: SyncRequest) async throws -> Set<String> {
        guard let store = options.attachments else { return [] }
        var referenced = Set<String>()
        for changeSet in request.changeSets {
            for changes in changeSet.entities {
                guard let entity = schema.entity(changes.entity), entity.fields.contains(where: { $0.type == .attachment }) else { continue }
                let written = Set(changes.create).union(changes.update).union(changes.recreate)
                for record in changes.records where written.contains(record.id) {
                    for index in record.present where entity.fields[index].type == .attachment {
                        if case .text(let text) = record.values[index], let reference = try? AttachmentReference(parsing: text) {
                            referenced.insert(reference.sha256)
                        }
                    }
                }
            }
        }
        var missing = Set<String>()
        // Each hash found is marked in use at once: a collection running now leaves it.
        for sha256 in referenced where try await !store.keepIfFinished(sha256) {
            missing.insert(sha256)
        }
        return missing
    }

    /// The first attachment field of `record` whose reference names a hash in `missing`.
    static func missingAttachment(_ record: WireRecord, entity: Entity, missing: Set<String>) -> (field: Int, sha256: String)? {
        guard !missing.isEmpty else { return nil }
        for index in record.present where entity.fields[index].type == .attachment {
            if case .text(let text) = record.values[index], let reference = try? AttachmentReference(parsing: text),
                missing.contains(reference.sha256)
            {
                return (index, reference.sha256)
            }
        }
        return nil
    }
}
