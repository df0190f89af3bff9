import FieldMerge

extension RevisionServer {
    /// Whether `identity` may download the attachment `sha256` (Specs/attachments.md): some
    /// alive record it may read references it.
    ///
    /// Without scopes every user of the data set reads every record of the entities
    /// ``Options/readable`` lets it read, so one such record is enough. With scopes
    /// (Specs/scopes.md) visibility is per record, and this step does not check it yet:
    /// the answer is ``AttachmentAccess/scoped``, which the HTTP endpoint refuses.
    ///
    /// - Parameter sha256: 64 lowercase hexadecimal digits (checked by the caller).
    public func attachmentAccess(_ sha256: String, identity: SyncIdentity?) async throws(ServerError) -> AttachmentAccess {
        guard scopePlan == nil else { return .scoped }
        let prefix = "sha256:\(sha256);"
        let fields = entities.flatMap { entity in
            entity.entity.fields.indices.compactMap { index -> (ServerEntity, Int)? in
                let field = entity.entity.fields[index]
                guard field.type == .attachment, !field.retired, !entity.entity.retired else { return nil }
                guard options.readable?(identity, entity.name) ?? true else { return nil }
                return (entity, index)
            }
        }
        guard !fields.isEmpty else { return .unreferenced }
        await turnstile.enter()
        defer { turnstile.leave() }
        do {
            return try await storage.read { () async throws -> AttachmentAccess in
                for (entity, field) in fields where try await storage.record(entity, field: field, beginningWith: prefix) != nil {
                    return .allowed
                }
                return .unreferenced
            }
        } catch {
            throw Self.serverError(error)
        }
    }
}

/// Whether a caller may download an attachment.
public enum AttachmentAccess: Sendable, Equatable {
    /// A record the caller may read references it.
    case allowed
    /// No alive record the caller may read references it.
    case unreferenced
    /// The data set has scopes, whose per-record check downloads do not make yet: refused.
    case scoped
}
