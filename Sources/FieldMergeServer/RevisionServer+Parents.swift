import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Adds to a catch-up page that ends before the server's revision the records its
    /// records reference whose latest change comes in a later page.
    ///
    /// The log keeps each record at its latest revision, so a parent changed after its child
    /// was created sorts after the child: without this, a client would get the child first
    /// and could not commit the page (its foreign key names a record it does not have). The
    /// parents come with their current state and come again, unchanged, in their own page.
    /// Followed transitively; a parent already deleted is left out (its delete reached the
    /// child too, at a later revision, so the child is not in this page either).
    func includeParents(of changed: inout [EntityChanges], after revision: Int64, end: Int64) async throws {
        var included: Set<String> = []
        var queue: [(entity: ServerEntity, record: WireRecord)] = []
        for changes in changed {
            guard let position = positions[changes.entity], entities[position].hasReferences else { continue }
            let deleted = Set(changes.delete)
            for record in changes.records where !deleted.contains(record.id) { queue.append((entities[position], record)) }
        }
        for changes in changed {
            for record in changes.records { included.insert("\(changes.entity)#\(record.id)") }
        }
        var slots: [String: Int] = [:]
        for (index, changes) in changed.enumerated() { slots[changes.entity] = index }
        while let (entity, record) = queue.popLast() {
            for (index, field) in entity.entity.fields.enumerated() {
                guard let target = field.type.referenceTarget, case .integer(let id) = record.values[index],
                    included.insert("\(target)#\(id)").inserted, let targetPosition = positions[target]
                else { continue }
                let parentEntity = entities[targetPosition]
                guard let logged = try await storage.loggedRevision(parentEntity, id: id), logged > end,
                    let parent = try await storage.row(parentEntity, id: id)
                else { continue }
                let wire = wireRecord(parent, entity: parentEntity)
                if slots[target] == nil {
                    slots[target] = changed.count
                    changed.append(EntityChanges(entity: target))
                }
                let slot = slots[target]!
                if parent.created > revision { changed[slot].create.append(id) } else { changed[slot].update.append(id) }
                changed[slot].records.append(wire)
                if parentEntity.hasReferences { queue.append((parentEntity, wire)) }
            }
        }
        // Keep the schema's order of entities.
        changed.sort { positions[$0.entity, default: 0] < positions[$1.entity, default: 0] }
    }

}
