import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Where this server keeps the bytes of attachments (``Options/attachments``), or nil.
    public nonisolated var attachmentStore: (any AttachmentStore)? { options.attachments }

    /// Whether `identity` may download the attachment `sha256` (Specs/attachments.md): some
    /// alive record it may read references it, in an entity ``Options/readable`` lets it
    /// read.
    ///
    /// Without scopes that is any such record. With scopes (Specs/scopes.md) a record of a
    /// scoped entity counts when its root is one the identity is granted now, as for
    /// catch-up, or one a `subscribe` grant lets it subscribe to (a device that may
    /// subscribe to a root may read its records, so a download need not name its
    /// subscriptions).
    ///
    /// The answer carries the media type of the reference that allowed it, which the
    /// download is served as.
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
    /// is one `identity` reads, and the media type its reference names.
    private func access(_ prefix: String, fields: [(ServerEntity, Int)], identity: SyncIdentity?) async throws -> AttachmentAccess {
        // Records of scoped entities that reference it: their scope, root and media type.
        var scoped: [(scope: Int, root: Int64?, mediaType: String)] = []
        for (entity, field) in fields {
            let scope = scopePlan?.places[entity.position].scope
            let ids = try await storage.records(entity, field: field, beginningWith: prefix, limit: scope == nil ? 1 : Int.max)
            guard !ids.isEmpty else { continue }
            for row in try await storage.rows(entity, ids: ids).values.sorted(by: { $0.record.id < $1.record.id }) {
                guard case .text(let text) = row.record.values[field], let reference = try? AttachmentReference(parsing: text) else { continue }
                guard let scope else { return .allowed(mediaType: reference.mediaType) }
                scoped.append((scope, row.root, reference.mediaType))
            }
        }
        guard let plan = scopePlan, !scoped.isEmpty else { return .unreferenced }
        // The roots asked as subscriptions: the granted ones come back, and those of them a
        // `subscribe` grant allows.
        var asked = [Set<Int64>](repeating: [], count: plan.scopes.count)
        for candidate in scoped { if let root = candidate.root { asked[candidate.scope].insert(root) } }
        var subscriptions = ScopeHoldings()
        for (index, roots) in asked.enumerated() where !roots.isEmpty { subscriptions[plan.scopes[index].name] = .ids(roots) }
        let granted = try await grantedRoots(identity, subscriptions: subscriptions)
        for candidate in scoped where granted[candidate.scope].contains(candidate.root) {
            return .allowed(mediaType: candidate.mediaType)
        }
        return .unreferenced
    }
}

/// Whether a caller may download an attachment.
public enum AttachmentAccess: Sendable, Equatable {
    /// A record the caller may read references it, naming the bytes' media type.
    case allowed(mediaType: String)
    /// No alive record the caller may read references it.
    case unreferenced
}
