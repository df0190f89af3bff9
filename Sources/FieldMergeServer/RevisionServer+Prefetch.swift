import FieldMerge
import FieldMergeProtocol

/// What a change set knows of its records before it runs: read in one call per entity
/// (``ServerStorage/rows(_:ids:)``, ``ServerStorage/deletions(_:ids:)``) instead of one per
/// record. An entry is dropped when the change set writes its record, so every later read of
/// it goes to the storage again and sees exactly what a read per record would.
struct KnownRecords {
    /// By entity position and id: the alive record, or nil when it had none.
    private var rows: [Int: [Int64: ServerRow?]] = [:]
    /// By entity position and id: the tombstone, or nil when it had none.
    private var deletions: [Int: [Int64: Deletion?]] = [:]

    /// The record as read before (`.some(nil)`: known not alive), or nil when not known.
    func row(_ position: Int, _ id: Int64) -> ServerRow?? { rows[position]?[id] }
    func deletion(_ position: Int, _ id: Int64) -> Deletion?? { deletions[position]?[id] }

    mutating func learn(_ position: Int, ids: [Int64], rows found: [Int64: ServerRow]) {
        for id in ids { rows[position, default: [:]].updateValue(found[id], forKey: id) }
    }

    mutating func learn(_ position: Int, ids: [Int64], deletions found: [Int64: Deletion]) {
        for id in ids { deletions[position, default: [:]].updateValue(found[id], forKey: id) }
    }

    /// The change set wrote the record (or its tombstone): what was read of it is stale.
    mutating func wrote(_ position: Int, _ id: Int64) {
        rows[position]?.removeValue(forKey: id)
        deletions[position]?.removeValue(forKey: id)
    }

    /// The change set deleted the record: it is known not alive; its new tombstone is not known.
    mutating func deleted(_ position: Int, _ id: Int64) {
        rows[position, default: [:]].updateValue(nil, forKey: id)
        deletions[position]?.removeValue(forKey: id)
    }

    /// Forgets everything (writes that reach records the change set did not name).
    mutating func forget() { (rows, deletions) = ([:], [:]) }
}

extension RevisionServer {
    /// Reads, in one call per entity, the records the change set updates, deletes or
    /// re-creates, and the tombstones of those it re-creates.
    func prefetch(_ changeSet: ChangeSet, _ attempt: inout ChangeSetAttempt) async throws {
        var named: [Int: (entity: ServerEntity, ids: [Int64], recreated: [Int64])] = [:]
        for changes in changeSet.entities {
            let entity = try entity(changes.entity)
            var ids = (changes.update + changes.delete).map { attempt.resolve(changes.entity, $0) }
            ids += changes.recreate
            named[entity.position, default: (entity, [], [])].ids += ids.filter { $0 > 0 }
            named[entity.position]!.recreated += changes.recreate
        }
        for position in named.keys.sorted() {
            let (entity, ids, recreated) = named[position]!
            if !ids.isEmpty { attempt.known.learn(position, ids: ids, rows: try await storage.rowsToChange(entity, ids: ids)) }
            if !recreated.isEmpty {
                attempt.known.learn(position, ids: recreated, deletions: try await storage.deletionsToChange(entity, ids: recreated))
            }
        }
    }

    /// The alive record `id` of `entity`: as the change set read it before, or from the storage.
    func row(_ entity: ServerEntity, id: Int64, _ attempt: ChangeSetAttempt) async throws -> ServerRow? {
        if let known = attempt.known.row(entity.position, id) { return known }
        return try await storage.rowsToChange(entity, ids: [id])[id]
    }

    /// The tombstone of record `id` of `entity`: as the change set read it before, or from the storage.
    func deletion(_ entity: ServerEntity, id: Int64, _ attempt: ChangeSetAttempt) async throws -> Deletion? {
        if let known = attempt.known.deletion(entity.position, id) { return known }
        return try await storage.deletionsToChange(entity, ids: [id])[id]
    }

    /// Writes `row` and forgets what the change set read of it.
    func write(_ row: ServerRow, of entity: ServerEntity, _ attempt: inout ChangeSetAttempt) async throws {
        attempt.known.wrote(entity.position, row.record.id)
        try await storage.write(row, of: entity)
    }

    /// Every reference `references` names exists; else the first that does not, in order.
    func firstMissing(
        _ references: [(target: String, targetID: Int64, entity: String, id: Int64)]
    ) async throws -> (target: String, targetID: Int64, entity: String, id: Int64)? {
        var byTarget: [String: [Int64]] = [:]
        for reference in references { byTarget[reference.target, default: []].append(reference.targetID) }
        var existing: [String: Set<Int64>] = [:]
        for (target, ids) in byTarget.sorted(by: { $0.key < $1.key }) {
            existing[target] = try await storage.existing(try entity(target), ids: ids)
        }
        return references.first { existing[$0.target]?.contains($0.targetID) != true }
    }
}
