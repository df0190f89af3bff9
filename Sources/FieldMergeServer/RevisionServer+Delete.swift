import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Deletes a record and follows the schema's references: cascade deletes, setNull
    /// clears, restrict refuses (a conflict).
    ///
    /// The tombstone's stamp is the one the client sent (clamped), or a fresh one for
    /// cascades and peers that send none; it travels with every answer about the delete.
    func delete(
        _ id: Int64, sentRevision: Int64?, stamp: Stamp? = nil, in entity: ServerEntity, _ attempt: inout ChangeSetAttempt
    ) async throws {
        attempt.touched.append((entity.name, id))
        let key = "\(entity.name)#\(id)"
        guard let row = try await row(entity, id: id, attempt) else {
            // Deleted by a cascade of this change set already: the answer has it.
            if attempt.deletedHere.contains(key) { return }
            throw ServerRefusal.conflict(touched: attempt.touched)
        }
        // Outside the scope is refused whatever revision it names (a device that held it once).
        if sentRevision != nil, let scope = scopePlan?.places[entity.position].scope,
            try await !holds(row.root, scope: scope, identity: attempt.identity)
        {
            throw outOfScope(entity.name, id, sentID: id, .delete, attempt)
        }
        guard sentRevision == nil || sentRevision == row.revision || sentRevision == attempt.revisionBefore[key] else {
            throw ServerRefusal.conflict(touched: attempt.touched)
        }
        if sentRevision != nil {
            try authorize(entity.name, id, sentID: id, .delete, attempt)
            attempt.sentDelete = (entity.name, id)
        }
        attempt.answer(entity.name) { _ in }  // the deleted entity is listed before what it cascades to
        for reference in entity.referencedBy {
            let child = entities[reference.entity]
            for childID in try await storage.referencing(id, from: child, field: reference.field) {
                switch reference.action {
                case .restrict:
                    let refused = attempt.sentDelete ?? (entity.name, id)
                    throw ServerRefusal.conflict(
                        touched: attempt.touched + [(child.name, childID)],
                        refused: [RefusedRecord(
                            entity: refused.entity, id: refused.id, code: "restricted",
                            message: "\(child.name)#\(childID) references \(entity.name)#\(id), which its delete rule (restrict) keeps")])
                case .cascade:
                    try await delete(childID, sentRevision: nil, in: child, &attempt)
                case .setNull:
                    guard var childRow = try await self.row(child, id: childID, attempt) else { continue }
                    attempt.touched.append((child.name, childID))
                    let childKey = "\(child.name)#\(childID)"
                    if attempt.revisionBefore[childKey] == nil { attempt.revisionBefore[childKey] = childRow.revision }
                    childRow.record.set(reference.field, .null, stamp: clock.now())
                    childRow.advance(to: attempt.revision, changed: FieldMask([reference.field]))
                    let oldRoot = childRow.root
                    if case .member(_, reference.field, _)? = scopePlan?.places[child.position] { childRow.root = nil }
                    try await write(childRow, of: child, &attempt)
                    if childRow.root != oldRoot {
                        try await moved(child, id: childID, from: oldRoot, to: nil, &attempt)
                    }
                    attempt.answer(child.name) {
                        $0.update.append(childID)
                        $0.records.append(wireRecord(childRow, entity: child))
                    }
                }
            }
        }
        let deletion = Deletion(id: id, revision: attempt.revision, tombstone: accept(stamp))
        attempt.known.deleted(entity.position, id)
        try await storage.delete(entity, id: id, tombstone: deletion.tombstone, revision: deletion.revision)
        attempt.deletedHere.insert(key)
        attempt.answer(entity.name) {
            $0.delete.append(id)
            $0.records.append(deletedRecord(deletion, entity: entity))
        }
    }

    /// The answer to a conflicting change set: the server's true state of every record the
    /// change set named or reached, each under update (alive) or delete (deleted).
    func truth(for changeSet: ChangeSet, touched: [(entity: String, id: Int64)], idMap: [String: [Int64: Int64]]) async throws -> ChangeSet {
        var wanted: [(entity: String, id: Int64)] = []
        var seen: Set<String> = []
        func add(_ entity: String, _ id: Int64) {
            let resolved = id < 0 ? idMap[entity]?[id] ?? id : id
            if resolved > 0, seen.insert("\(entity)#\(resolved)").inserted { wanted.append((entity, resolved)) }
        }
        for changes in changeSet.entities {
            for id in changes.update + changes.delete + changes.recreate { add(changes.entity, id) }
        }
        for (entity, id) in touched { add(entity, id) }
        var byEntity: [String: EntityChanges] = [:]
        var order: [String] = []
        // Read in one call per entity: the alive records, then the tombstones of the others.
        var ids: [String: [Int64]] = [:]
        for (name, id) in wanted { ids[name, default: []].append(id) }
        var rows: [String: [Int64: ServerRow]] = [:], deletions: [String: [Int64: Deletion]] = [:]
        for (name, named) in ids.sorted(by: { $0.key < $1.key }) {
            let entity = try entity(name)
            let alive = try await storage.rows(entity, ids: named)
            rows[name] = alive
            let gone = named.filter { alive[$0] == nil }
            if !gone.isEmpty { deletions[name] = try await storage.deletions(entity, ids: gone) }
        }
        for (name, id) in wanted {
            let entity = try entity(name)
            if byEntity[name] == nil { byEntity[name] = EntityChanges(entity: name, create: [], update: [], delete: [], records: []); order.append(name) }
            if let row = rows[name]?[id] {
                byEntity[name]!.update.append(id)
                byEntity[name]!.records.append(wireRecord(row, entity: entity))
            } else if let deletion = deletions[name]?[id] {
                byEntity[name]!.delete.append(id)
                byEntity[name]!.records.append(deletedRecord(deletion, entity: entity))
            } else if let compacted = try await compactedDeletion(entity, id: id) {
                // What a compacted tombstone stands for: without it the client would send the
                // same change again for ever.
                byEntity[name]!.delete.append(id)
                byEntity[name]!.records.append(deletedRecord(compacted, entity: entity))
            }
        }
        // An entity none of whose records exists (a create refused before it was written) is left out.
        return ChangeSet(entities: order.compactMap { byEntity[$0]!.records.isEmpty ? nil : byEntity[$0] }, conflict: true)
    }
}
