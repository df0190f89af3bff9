import FieldMerge

/// One record the server acknowledged: what the replica keeps now, and the server's version,
/// which becomes the ancestor.
package struct AcknowledgedRecord: Sendable {
    /// What to hold locally: the merge of the server's version with the local edits (equal to
    /// ``ancestor`` when nothing local is pending). Deleted records leave the app table.
    package var record: Record
    /// The server's version: the new ancestor (deleted when the server deleted it).
    package var ancestor: Record
    /// The revision the server gave ``ancestor``.
    package var revision: Int64

    package init(record: Record, ancestor: Record, revision: Int64) {
        self.record = record
        self.ancestor = ancestor
        self.revision = revision
    }

    /// A record taken as the server has it, with nothing pending.
    package init(_ record: Record, revision: Int64) {
        self.init(record: record, ancestor: record, revision: revision)
    }
}

/// What one server response changes in the store, applied in one transaction.
package struct ServerChanges: Sendable {
    /// Temporary ids the server replaced by permanent ones.
    package var remaps: [(entity: String, temporary: Int64, permanent: Int64)]
    package var records: [AcknowledgedRecord]
    /// The server's revision after this response; nil leaves it as it is.
    package var maxRevision: Int64?
    /// Records received as created by others (catch-up `create`), by entity: the change
    /// feed reports them as inserted, the others as updated.
    package var created: [String: Set<Int64>] = [:]
    /// The conflicts the merges of this response decided, for the change feed.
    package var conflicts: [FieldConflict] = []
    /// Changes the server refused as they are: kept aside with the reason (by the id the
    /// record has after the remaps).
    package var refused: [(entity: String, id: Int64, code: String, message: String)] = []
    /// Records that left what the device may hold (catch-up `leave`): removed with the local
    /// records referencing them, after everything else is written, their unsynced changes
    /// kept aside (``Store/keptAside()``); nothing is sent for them.
    package var left: [(entity: String, id: Int64)] = []
    /// What the device holds of the server's scopes once this response is applied (opaque
    /// text: `ScopeHoldings.storedText`); nil when the server has none. Written beside
    /// ``maxRevision``, and only with it: changes without a revision leave both as they are.
    package var scopeState: String?

    package init(
        remaps: [(entity: String, temporary: Int64, permanent: Int64)] = [], records: [AcknowledgedRecord] = [],
        maxRevision: Int64? = nil
    ) {
        self.remaps = remaps
        self.records = records
        self.maxRevision = maxRevision
    }
}

extension Store {
    /// Applies what the server acknowledged, in one transaction: id remaps (rows, foreign
    /// keys in other rows, the outbox and the id map), rows, new ancestors, pending fields,
    /// the records that left the device's scopes, and the new maxRevision with the scope
    /// holdings, all or nothing. This is the only way an ancestor changes.
    ///
    /// Inside a caller's transaction it takes no savepoint: when it throws, the caller must
    /// roll back (as ``transaction(origin:_:)`` does when its body throws).
    ///
    /// - Parameter beforeCommit: Runs inside the transaction after everything is written;
    ///   throwing from it rolls everything back (the sync layer and crash tests use it).
    package func apply(_ changes: ServerChanges, beforeCommit: () throws -> Void = {}) throws(StoreError) {
        // No savepoint inside the sync client's transaction, which rolls back on any error:
        // one would make SQLite copy every page it changes first (a third of the time).
        try write(origin: .sync, savepoint: false) {
            for remap in changes.remaps {
                try self.remap(remap.entity, temporary: remap.temporary, permanent: remap.permanent)
                journal { $0.remapped.append(StoreChange.Remap(entity: remap.entity, temporary: remap.temporary, permanent: remap.permanent)) }
            }
            // One statement: whether anything is pending or deleted here; whether a rebase is
            // under way (``isRebasing``) from the schema SQLite holds in memory.
            let counts = try database.rows(
                "SELECT (SELECT count(*) FROM \"__fm_outbox\"), (SELECT count(*) FROM \"__fm_tombstones\")").first ?? []
            let outboxEmpty = counts.first == .integer(0), noTombstones = counts.last == .integer(0)
            let rebasing = try database.hasTable("__fm_rebase")
            var deleted: [(table: EntityTable, id: Int64)] = []
            // Past a few hundred rows the capture triggers (which skip the store's writes
            // anyway) cost more than dropping them and creating them again.
            if changes.records.count >= Self.bulkApply {
                try withoutCaptureTriggers { try applyRecords(changes, outboxEmpty: outboxEmpty, noTombstones: noTombstones, deleted: &deleted) }
            } else {
                try applyRecords(changes, outboxEmpty: outboxEmpty, noTombstones: noTombstones, deleted: &deleted)
            }
            if rebasing { try crossOff(changes.records) }
            if !changes.conflicts.isEmpty {
                try recordConflicts(changes.conflicts)
                journal { $0.conflicts = changes.conflicts }
            }
            // Records the server's cascade could not reach (created here, not sent yet or
            // refused) may still point at a record it deleted: they follow the schema's
            // `onDelete` as if the delete had been made here, else the commit would fail.
            // Likewise records the server sends alive (another device's edit of a child
            // kept by `editWins`) under a parent this device deleted and has not sent yet.
            if !noTombstones { deleted += try parentsDeletedHere(of: changes.records) }
            if !deleted.isEmpty {
                let stamp = clock.now()
                var visited: Set<String> = []
                for (table, id) in deleted { try followReferences(to: table, id: id, stamp: stamp, visited: &visited) }
            }
            for refusal in changes.refused {
                try park(refusal.entity, id: refusal.id, code: refusal.code, message: refusal.message)
            }
            // Last, so that a record this response also sent or refused is kept aside as it
            // now stands, and one that left is gone whatever else the response said of it.
            if !changes.left.isEmpty { try removeLeaving(changes.left) }
            if let revision = changes.maxRevision {
                maxRevision = revision
                try saveScopeState(changes.scopeState)
            }
            try saveState()
            try beforeCommit()
        }
    }

    /// The parents that alive records of `records` reference but that this device deleted
    /// (they have a tombstone and no row): their deletes are not acknowledged yet, and the
    /// server will cascade them when they arrive.
    private func parentsDeletedHere(of records: [AcknowledgedRecord]) throws -> [(table: EntityTable, id: Int64)] {
        var tombstones: Set<String> = []
        for row in try database.rows("SELECT \"entity\", \"id\" FROM \"__fm_tombstones\"") {
            if case .text(let entity) = row[0], case .integer(let id) = row[1] { tombstones.insert("\(entity)#\(id)") }
        }
        var seen: Set<String> = [], parents: [(table: EntityTable, id: Int64)] = []
        for acknowledged in records where !acknowledged.record.isDeleted {
            let fields = try table(acknowledged.record.entity).entity.fields
            for (index, field) in fields.enumerated() {
                guard case .reference(let target, _) = field.type, case .integer(let id) = acknowledged.record.values[index] else { continue }
                let key = "\(target)#\(id)"
                guard tombstones.contains(key), seen.insert(key).inserted else { continue }
                let parent = try table(target)
                if try readRow(parent, id: id) == nil { parents.append((parent, id)) }
            }
        }
        return parents
    }

    /// Rows at which ``apply(_:beforeCommit:)`` drops the capture triggers for its writes.
    static let bulkApply = 500

    private func applyRecords(
        _ changes: ServerChanges, outboxEmpty: Bool, noTombstones: Bool, deleted: inout [(table: EntityTable, id: Int64)]
    ) throws {
        // Written in the order of the tables' keys: a page of catch-up comes in revision
        // order, scattered over the table; in key order SQLite walks its pages once instead
        // of hopping between them (a page of 10,000 into 1,000,000 records: half the time).
        for position in Self.keyOrder(changes.records) {
            try applyOne(changes.records[position], outboxEmpty: outboxEmpty, noTombstones: noTombstones)
        }
        for acknowledged in changes.records {
            let record = acknowledged.record
            if record.isDeleted { deleted.append((try table(record.entity), record.id)) }
            journal { change in
                if record.isDeleted {
                    change.deleted[record.entity, default: []].append(record.id)
                } else if changes.created[record.entity]?.contains(record.id) == true {
                    change.inserted[record.entity, default: []].append(record.id)
                } else {
                    change.updated[record.entity, default: []].append(record.id)
                }
            }
        }
    }

    /// The positions of `records` ordered by entity and id (then position, so a record
    /// named twice is written in the order given).
    static func keyOrder(_ records: [AcknowledgedRecord]) -> [Int] {
        var keys = records.indices.map { (entity: records[$0].record.entity, id: records[$0].record.id, position: $0) }
        keys.sort { ($0.entity, $0.id, $0.position) < ($1.entity, $1.id, $1.position) }
        return keys.map(\.position)
    }

    private func applyOne(_ acknowledged: AcknowledgedRecord, outboxEmpty: Bool, noTombstones: Bool) throws {
        var record = acknowledged.record, ancestor = acknowledged.ancestor
        let table = try self.table(record.entity)
        guard ancestor.entity == record.entity, ancestor.id == record.id else {
            throw StoreError(.invalidRecord, "the record and its ancestor differ in entity or id", entity: record.entity, id: record.id)
        }
        try Self.canonicalize(&record)
        // Usually the record is its own ancestor (same storage: the comparison is immediate).
        let same = !ancestor.isDeleted && ancestor.values == record.values && ancestor.stamps == record.stamps
        if !same {
            try Self.canonicalize(&ancestor)
            try table.check(ancestor)
        }
        if record.isDeleted {
            try deleteRow(table, id: record.id)
            if ancestor.isDeleted {
                try deleteTombstone(record.entity, id: record.id)
                try clearPending(record.entity, id: record.id)
            } else {
                try writeTombstone(table.entity, Tombstone(
                    record: record, pending: FieldMask(), revision: acknowledged.revision, ancestor: ancestor))
                try markPending(record.entity, id: record.id)
            }
            return
        }
        try table.check(record)
        let pending = same ? FieldMask() : Self.pendingFields(record, ancestor: ancestor, retired: table.entity.retiredFields)
        try writeRow(table, StoredRow(
            record: record, pending: pending, revision: acknowledged.revision, storedAncestor: same ? nil : ancestor))
        if !noTombstones { try deleteTombstone(record.entity, id: record.id) }
        if pending.isEmpty && !ancestor.isDeleted {
            if !outboxEmpty { try clearPending(record.entity, id: record.id) }
        } else {
            try markPending(record.entity, id: record.id)
        }
    }

    /// Replaces a temporary id by the permanent one the server gave: in the entity's table,
    /// in every foreign key pointing at it, in the tombstones and the outbox; and records
    /// the pair in the id map.
    private func remap(_ entity: String, temporary: Int64, permanent: Int64) throws {
        let table = try self.table(entity)
        let quotedEntity = SQLValue.text(entity)
        try database.run("UPDATE \(table.table) SET \"id\" = ? WHERE \"id\" = ?", [.integer(permanent), .integer(temporary)])
        for reference in table.referencedBy {
            let child = try self.table(reference.entity)
            let column = Database.quote(child.entity.fields[reference.field].name)
            try database.run(
                "UPDATE \(child.table) SET \(column) = ? WHERE \(column) = ?", [.integer(permanent), .integer(temporary)])
        }
        try database.run(
            "UPDATE \"__fm_tombstones\" SET \"id\" = ? WHERE \"entity\" = ? AND \"id\" = ?",
            [.integer(permanent), quotedEntity, .integer(temporary)])
        try database.run(
            "UPDATE \"__fm_outbox\" SET \"id\" = ? WHERE \"entity\" = ? AND \"id\" = ?",
            [.integer(permanent), quotedEntity, .integer(temporary)])
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_idmap\" (\"entity\", \"temporary\", \"permanent\") VALUES (?, ?, ?)",
            [quotedEntity, .integer(temporary), .integer(permanent)])
    }
}
