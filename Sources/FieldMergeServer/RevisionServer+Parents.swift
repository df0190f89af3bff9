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
        // Only records of entities that something references can be asked for as parents:
        // those are the ones noted as already in the page.
        var included: Set<RecordKey> = []
        var slots: [String: Int] = [:]
        for (index, changes) in changed.enumerated() {
            slots[changes.entity] = index
            guard let position = positions[changes.entity], !entities[position].referencedBy.isEmpty else { continue }
            included.reserveCapacity(included.count + changes.records.count)
            for record in changes.records { included.insert(RecordKey(entity: position, id: record.id)) }
        }
        // The parents the page's alive records name that it does not hold yet, by entity (read
        // in place: a copy of each record would retain and release its arrays once more).
        var candidates: [Int: [Int64]] = [:]
        for changes in changed {
            guard let position = positions[changes.entity], entities[position].hasReferences else { continue }
            let deleted = changes.delete.isEmpty ? [] : Set(changes.delete)
            for record in changes.records where !deleted.contains(record.id) {
                note(parentsOf: record, entity: entities[position], into: &candidates, included: &included)
            }
        }
        // Level by level: each entity's missing parents looked up in the log in one call,
        // then their own parents.
        while !candidates.isEmpty {
            var next: [Int: [Int64]] = [:]
            for (targetPosition, ids) in candidates.sorted(by: { $0.key < $1.key }) {
                let parentEntity = entities[targetPosition]
                let target = parentEntity.name
                let later = try await storage.logged(parentEntity, ids: ids, after: end)
                let parents = later.isEmpty ? [:] : try await storage.rows(parentEntity, ids: later)
                for id in later {
                    guard let parent = parents[id] else { continue }
                    let wire = wireRecord(parent, entity: parentEntity)
                    if slots[target] == nil {
                        slots[target] = changed.count
                        changed.append(EntityChanges(entity: target))
                    }
                    let slot = slots[target]!
                    if parent.created > revision { changed[slot].create.append(id) } else { changed[slot].update.append(id) }
                    changed[slot].records.append(wire)
                    if parentEntity.hasReferences { note(parentsOf: wire, entity: parentEntity, into: &next, included: &included) }
                }
            }
            candidates = next
        }
        // Keep the schema's order of entities.
        changed.sort { positions[$0.entity, default: 0] < positions[$1.entity, default: 0] }
    }

    /// Adds to `candidates` the records `record` references that are not `included` yet
    /// (and includes them).
    private func note(parentsOf record: WireRecord, entity: ServerEntity, into candidates: inout [Int: [Int64]], included: inout Set<RecordKey>) {
        for (index, targetPosition) in entity.references {
            guard case .integer(let id) = record.values[index], included.insert(RecordKey(entity: targetPosition, id: id)).inserted
            else { continue }
            candidates[targetPosition, default: []].append(id)
        }
    }

    /// A record of the page, by its entity's position and its id.
    private struct RecordKey: Hashable {
        var entity: Int
        var id: Int64
    }
}
