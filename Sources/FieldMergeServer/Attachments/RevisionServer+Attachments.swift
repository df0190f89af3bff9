import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Whether `identity` may download the attachment `sha256` (Specs/attachments.md): some
    /// alive record it may read references it, in an entity ``Options/readable`` lets it
    /// read.
    ///
    /// Without scopes that is any such record. With scopes (Specs/scopes.md) a record of a
    /// scoped entity counts only when its root is one the identity is granted now, as for
    /// catch-up; roots a device holds only through a `subscribe` grant do not count (a
    /// download names no subscriptions).
    ///
    /// - Parameter sha256: 64 lowercase hexadecimal digits (checked by the caller).
    public func attachmentAccess(_ sha256: String, identity: SyncIdentity?) async throws(ServerError) -> AttachmentAccess {
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
            if scopePlan != nil && !rootsReady { try await prepareRoots() }
            return try await storage.read { () async throws -> AttachmentAccess in
                try await access(prefix, fields: fields, identity: identity)
            }
        } catch {
            throw Self.serverError(error)
        }
    }

    /// Inside a read transaction: whether a record among `fields` that references `prefix`
    /// is one `identity` reads.
    private func access(_ prefix: String, fields: [(ServerEntity, Int)], identity: SyncIdentity?) async throws -> AttachmentAccess {
        var granted: [RootSet]?
        for (entity, field) in fields {
            guard let scope = scopePlan?.places[entity.position].scope else {
                if try await !storage.records(entity, field: field, beginningWith: prefix, limit: 1).isEmpty { return .allowed }
                continue
            }
            let ids = try await storage.records(entity, field: field, beginningWith: prefix, limit: Int.max)
            guard !ids.isEmpty else { continue }
            if granted == nil { granted = try await grantedRoots(identity) }
            for row in try await storage.rows(entity, ids: ids).values where granted![scope].contains(row.root) {
                return .allowed
            }
        }
        return .unreferenced
    }
}

/// Whether a caller may download an attachment.
public enum AttachmentAccess: Sendable, Equatable {
    /// A record the caller may read references it.
    case allowed
    /// No alive record the caller may read references it.
    case unreferenced
}
