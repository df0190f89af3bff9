import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

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
    func includeParents(of entities: inout [EntityChanges], after revision: Int64, end: Int64) throws {
        var included: Set<String> = []
        var queue: [(table: ServerTable, record: WireRecord)] = []
        for changes in entities {
            guard let table = tables[changes.entity], table.hasReferences else { continue }
            let deleted = Set(changes.delete)
            for record in changes.records where !deleted.contains(record.id) { queue.append((table, record)) }
        }
        for changes in entities {
            for record in changes.records { included.insert("\(changes.entity)#\(record.id)") }
        }
        var position: [String: Int] = [:]
        for (index, changes) in entities.enumerated() { position[changes.entity] = index }
        while let (table, record) = queue.popLast() {
            for (index, field) in table.entity.fields.enumerated() {
                guard let target = field.type.referenceTarget, case .integer(let id) = record.values[index],
                    included.insert("\(target)#\(id)").inserted, let parentTable = tables[target],
                    let logged = try loggedRevision(target, id: id), logged > end,
                    let parent = try readRow(parentTable, id: id)
                else { continue }
                let wire = wireRecord(parent, table: parentTable)
                if position[target] == nil {
                    position[target] = entities.count
                    entities.append(EntityChanges(entity: target))
                }
                let slot = position[target]!
                if parent.created > revision { entities[slot].create.append(id) } else { entities[slot].update.append(id) }
                entities[slot].records.append(wire)
                if parentTable.hasReferences { queue.append((parentTable, wire)) }
            }
        }
        // Keep the schema's order of entities.
        let order = Dictionary(uniqueKeysWithValues: schema.entities.enumerated().map { ($1.name, $0) })
        entities.sort { order[$0.entity, default: 0] < order[$1.entity, default: 0] }
    }

    /// The revision the log holds for a record, or nil.
    private func loggedRevision(_ entity: String, id: Int64) throws(SQLiteError) -> Int64? {
        let value = try database.scalar(
            "SELECT \"revision\" FROM \"__fm_log\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)])
        if case .integer(let found)? = value { return found }
        return nil
    }
}
